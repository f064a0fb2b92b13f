//! Hostile accounts: a project owner cannot take over another account, support staff
//! cannot change tenants' endpoints, and no project reaches another's rows. Driven
//! through the server functions as a browser calls them (form POSTs to `/api/<name>`).

use crate::common;
use app::core::ProjectId;

use std::time::Duration;

use common::*;

/// A server function's form fields.
type Form<'a> = Vec<(&'a str, &'a str)>;

/// A signed-in browser: a cookie jar and the form posts a page makes.
struct Browser {
    http: reqwest::Client,
    base: String,
}

impl Browser {
    fn new(app: &TestApp) -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: app.base.clone(),
        }
    }

    async fn call(&self, name: &str, form: &[(&str, &str)]) -> (u16, String) {
        let r = self
            .http
            .post(format!("{}/api/{name}", self.base))
            .form(form)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    async fn signed_in(app: &TestApp, email: &str, password: &str) -> Browser {
        let b = Browser::new(app);
        let (status, body) = b
            .call("login", &[("email", email), ("password", password)])
            .await;
        assert!(status < 400, "login {email}: {status} {body}");
        b
    }
}

/// Sign-in guesses are counted in fixed 15-minute windows: a test that counts refusals
/// starts well inside one, or its guesses would straddle two and be counted apart.
async fn inside_one_sign_in_window() {
    let window = app::core::ratelimit::SIGN_IN_WINDOW_SECS;
    let left = window - chrono::Utc::now().timestamp().rem_euclid(window);
    if left < 90 {
        tokio::time::sleep(std::time::Duration::from_secs(left as u64 + 1)).await;
    }
}

/// A project with an owner who can sign in: (project id, owner email).
async fn project_with_owner(app: &TestApp, name: &str) -> (i64, String) {
    let email = format!("{}-{}@example.com", name.to_lowercase(), ulid::Ulid::new());
    let user = app::db::users::upsert(&app.pool, &email, "owner-password", "user")
        .await
        .unwrap();
    let p = app::db::projects::create(&app.pool, name, "business", user.id)
        .await
        .unwrap();
    (p.id.get(), email)
}

async fn invite(owner: &Browser, email: &str) -> String {
    let (status, body) = owner.call("invite_member", &[("email", email)]).await;
    assert_eq!(status, 200, "{body}");
    let link: String = serde_json::from_str(&body).unwrap();
    link.rsplit('/').next().unwrap().to_string()
}

/// The finding as it was: an owner invited `support@…` and called `accept_invitation`
/// with one guess after another; a wrong password rolled back and the token worked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invitation_cannot_be_used_to_guess_an_existing_accounts_password() {
    let app = TestApp::spawn().await;
    app::db::users::upsert(
        &app.pool,
        "support@example.com",
        "support-secret-1",
        "support",
    )
    .await
    .unwrap();
    let (_, owner_email) = project_with_owner(&app, "Attacker").await;
    let owner = Browser::signed_in(&app, &owner_email, "owner-password").await;
    let token = invite(&owner, "support@example.com").await;

    // Guessing wrong and then right: no password is ever checked on this path.
    let guest = Browser::new(&app);
    for guess in ["wrong-1", "wrong-2", "support-secret-1"] {
        let (status, body) = guest
            .call(
                "accept_invitation",
                &[("token", &token), ("password", guess)],
            )
            .await;
        assert_eq!(status, 401, "{body}");
        assert!(body.contains("sign in as support@example.com"), "{body}");
    }
    let (status, body) = guest.call("get_viewer", &[]).await;
    assert_eq!(
        (status, body.as_str()),
        (200, "null"),
        "nobody is signed in"
    );

    // The account's owner, signed in, may join; the link then works no more.
    let support = Browser::signed_in(&app, "support@example.com", "support-secret-1").await;
    let (status, body) = support
        .call("accept_invitation", &[("token", &token)])
        .await;
    assert!(status < 400, "{status} {body}");
    let (status, _) = support
        .call("accept_invitation", &[("token", &token)])
        .await;
    assert_eq!(status, 422);

    // A new address still joins with a password of its own.
    let token = invite(&owner, "newcomer@example.com").await;
    let newcomer = Browser::new(&app);
    let (status, body) = newcomer
        .call(
            "accept_invitation",
            &[("token", &token), ("password", "newcomer-password")],
        )
        .await;
    assert!(status < 400, "{status} {body}");
    let (_, viewer) = newcomer.call("get_viewer", &[]).await;
    assert!(viewer.contains("newcomer@example.com"), "{viewer}");
    app.stop().await;
}

/// Guesses are counted before the password is checked: 200 wrong sign-ins at once get
/// no more password checks than the limit, and the account's owner, elsewhere, still
/// signs in (slowed down, never locked out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_wrong_sign_ins_gets_no_more_than_the_limit() {
    inside_one_sign_in_window().await;
    let app = TestApp::spawn().await;
    let (_, email) = project_with_owner(&app, "Target").await;
    let browser = Browser::new(&app);
    let started = std::time::Instant::now();
    let attempts = (0..200).map(|i| {
        let b = &browser;
        let email = email.clone();
        async move {
            b.call(
                "login",
                &[("email", &email), ("password", &format!("guess-{i}"))],
            )
            .await
        }
    });
    let results = futures::future::join_all(attempts).await;
    let checked = results
        .iter()
        .filter(|(s, body)| *s == 401 && body.contains("Wrong email or password"))
        .count();
    let refused = results
        .iter()
        .filter(|(s, body)| *s == 429 && body.contains("Too many wrong passwords"))
        .count();
    println!(
        "200 parallel wrong sign-ins: {checked} password checks, {refused} refused, in {:?}",
        started.elapsed()
    );
    assert!(checked <= 10, "{checked} guesses were checked");
    assert_eq!(checked + refused, 200);

    // The right password from this address is refused too (the address is spent)…
    let (status, _) = browser
        .call(
            "login",
            &[("email", &email), ("password", "owner-password")],
        )
        .await;
    assert_eq!(status, 429);
    // …but the account is not locked: sign-in counts per address and account, and the
    // same account from another address only waits. (Counters are per address: the
    // test clears this address's to stand for another one.)
    sqlx::query(
        "DELETE FROM rate_counters WHERE bucket LIKE 'login-ip:%' OR bucket LIKE 'login-pair:%'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let t = std::time::Instant::now();
    let owner = Browser::signed_in(&app, &email, "owner-password").await;
    assert!(t.elapsed() >= Duration::from_secs(2), "slowed down");
    let (_, viewer) = owner.call("get_viewer", &[]).await;
    assert!(viewer.contains(&email));
    app.stop().await;
}

/// A password change keeps this session (under a new id), ends every other session of
/// the user, and is limited like sign-in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_password_ends_the_users_other_sessions() {
    inside_one_sign_in_window().await;
    let app = TestApp::spawn().await;
    let (_, email) = project_with_owner(&app, "Sessions").await;
    let laptop = Browser::signed_in(&app, &email, "owner-password").await;
    let phone = Browser::signed_in(&app, &email, "owner-password").await;
    let (status, body) = laptop
        .call(
            "change_password",
            &[
                ("current", "owner-password"),
                ("new_password", "new-password-1"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, viewer) = laptop.call("get_viewer", &[]).await;
    assert!(viewer.contains(&email), "this session goes on: {viewer}");
    let (_, viewer) = phone.call("get_viewer", &[]).await;
    assert_eq!(viewer, "null", "the other session ended");
    let page = phone
        .http
        .get(format!("{}/developers/deliveries", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        page.headers()["location"],
        "/login?next=%2Fdevelopers%2Fdeliveries"
    );

    // Guessing the current password is limited like sign-in.
    let mut statuses = Vec::new();
    for i in 0..12 {
        let (status, _) = laptop
            .call(
                "change_password",
                &[
                    ("current", &format!("guess-{i}")),
                    ("new_password", "whatever-123"),
                ],
            )
            .await;
        statuses.push(status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 422).count(),
        10,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        2,
        "{statuses:?}"
    );
    app.stop().await;
}

/// Every server function that acts on a project, called by support staff (read, Retry
/// and Redirect only: 403 for the rest) and by the owner of another project (404 for
/// every id of this one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn support_and_other_projects_are_refused_by_every_server_function() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let (project, owner_email) = project_with_owner(&app, "Tenant").await;
    let (endpoint, _) = app.endpoint(project, &receiver.url).await;
    let event = app
        .ingest(project, "order.paid", serde_json::json!({"n": 1}))
        .await;
    app.settled(&event, Duration::from_secs(10)).await;
    let delivery: i64 = sqlx::query_scalar("SELECT id FROM deliveries WHERE event_id = $1")
        .bind(&event)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    app::db::api_keys::create(&app.pool, ProjectId::new(project), "ci")
        .await
        .unwrap();
    let key_id: i64 = sqlx::query_scalar("SELECT id FROM api_keys WHERE project_id = $1")
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (p, ep, d, k) = (
        project.to_string(),
        endpoint.to_string(),
        delivery.to_string(),
        key_id.to_string(),
    );

    app::db::users::upsert(
        &app.pool,
        "staff@example.com",
        "support-password",
        "support",
    )
    .await
    .unwrap();
    let support = Browser::signed_in(&app, "staff@example.com", "support-password").await;
    assert_eq!(
        support
            .call("switch_project", &[("project_id", &p)])
            .await
            .0,
        200
    );

    // (name, form, support's status)
    let walk: Vec<(&str, Form, u16)> = vec![
        ("list_endpoints", vec![], 200),
        (
            "create_endpoint",
            vec![
                ("url", "https://example.com/x"),
                ("event_types", "*"),
                ("description", ""),
            ],
            403,
        ),
        (
            "update_endpoint",
            vec![("id", &ep), ("url", "https://attacker.example/hook")],
            403,
        ),
        (
            "edit_endpoint_header",
            vec![("id", &ep), ("name", "Authorization"), ("value", "x")],
            403,
        ),
        ("set_ops_endpoint", vec![("id", &ep)], 403),
        // A new threshold is refused; support staff are no project's members, so the
        // e-mail choice, with the threshold unchanged, is refused as well.
        (
            "save_alert_settings",
            vec![("minutes", "1"), ("email", "false")],
            403,
        ),
        ("alert_settings", vec![], 200),
        (
            "save_alert_settings",
            vec![("minutes", "15"), ("email", "true")],
            422,
        ),
        ("delete_endpoint", vec![("id", &ep)], 403),
        (
            "set_event_schema",
            vec![("event_type", "order.paid"), ("schema", "{}")],
            403,
        ),
        (
            "remove_event_schema",
            vec![("event_type", "order.paid")],
            403,
        ),
        ("try_event_schema", vec![("schema", "{}")], 403),
        ("reveal_secret", vec![("id", &ep)], 403),
        ("rotate_secret", vec![("id", &ep)], 403),
        ("test_send", vec![("id", &ep)], 403),
        ("list_keys", vec![], 403),
        ("create_key", vec![("name", "stolen")], 403),
        ("revoke_key", vec![("id", &k)], 403),
        ("invite_member", vec![("email", "friend@example.com")], 403),
        ("remove_member", vec![("email", &owner_email)], 403),
        (
            "set_member_role",
            vec![("email", &owner_email), ("role", "member")],
            403,
        ),
        ("list_audit", vec![], 200),
        ("event_catalogue", vec![], 200),
        ("list_members", vec![], 200),
        ("list_deliveries", vec![("filter[q]", "")], 200),
        ("delivery_filter_options", vec![], 200),
        (
            "get_delivery_detail",
            vec![("project_id", &p), ("id", &d)],
            200,
        ),
        (
            "refresh_rows",
            vec![("project_id", &p), ("ids[0]", &d)],
            200,
        ),
        ("retry_delivery", vec![("project_id", &p), ("id", &d)], 200),
        (
            "redirect_delivery",
            vec![("project_id", &p), ("id", &d)],
            200,
        ),
        (
            "preview_replay",
            vec![("filter[status]", "dead_letter")],
            200,
        ),
    ];
    for (name, form, expected) in &walk {
        let (status, body) = support.call(name, form).await;
        assert_eq!(status, *expected, "support {name}: {body}");
        if *expected == 403 {
            assert!(body.contains("Your role cannot"), "{name}: {body}");
        }
    }
    // Bulk replay is Retry at scale: support may start, follow and cancel one.
    let (status, body) = support
        .call("start_replay", &[("filter[status]", "succeeded")])
        .await;
    assert_eq!(status, 200, "support start_replay: {body}");
    let replay: serde_json::Value = serde_json::from_str(&body).unwrap();
    let replay_id = replay["id"].as_i64().unwrap().to_string();
    for name in ["get_replay_progress", "cancel_replay"] {
        let (status, body) = support.call(name, &[("id", &replay_id)]).await;
        assert_eq!(status, 200, "support {name}: {body}");
    }
    // Nothing changed behind the refusals.
    let (url, enabled): (String, bool) =
        sqlx::query_as("SELECT url, enabled FROM endpoints WHERE id = $1 AND deleted_at IS NULL")
            .bind(endpoint)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((url.as_str(), enabled), (receiver.url.as_str(), true));
    // Support's own password is its own to change.
    let (status, _) = support
        .call(
            "change_password",
            &[
                ("current", "support-password"),
                ("new_password", "support-password-2"),
            ],
        )
        .await;
    assert_eq!(status, 200);

    // The owner of another project: every id of this one is "not found".
    let (_, other_email) = project_with_owner(&app, "Other").await;
    let other = Browser::signed_in(&app, &other_email, "owner-password").await;
    let by_id: Vec<(&str, Form)> = vec![
        ("switch_project", vec![("project_id", &p)]),
        (
            "update_endpoint",
            vec![("id", &ep), ("url", "https://attacker.example/hook")],
        ),
        (
            "edit_endpoint_header",
            vec![("id", &ep), ("name", "X-A"), ("value", "x")],
        ),
        ("set_ops_endpoint", vec![("id", &ep)]),
        ("delete_endpoint", vec![("id", &ep)]),
        ("reveal_secret", vec![("id", &ep)]),
        ("rotate_secret", vec![("id", &ep)]),
        ("test_send", vec![("id", &ep)]),
        ("get_delivery_detail", vec![("project_id", &p), ("id", &d)]),
        ("refresh_rows", vec![("project_id", &p), ("ids[0]", &d)]),
        ("retry_delivery", vec![("project_id", &p), ("id", &d)]),
        ("redirect_delivery", vec![("project_id", &p), ("id", &d)]),
        ("remove_member", vec![("email", &owner_email)]),
    ];
    for (name, form) in &by_id {
        let (status, body) = other.call(name, form).await;
        assert_eq!(status, 404, "other project {name}: {body}");
    }
    assert_eq!(other.call("revoke_key", &[("id", &k)]).await.0, 404);
    for name in ["get_replay_progress", "cancel_replay"] {
        let (status, body) = other.call(name, &[("id", &replay_id)]).await;
        assert_eq!(status, 404, "other project {name}: {body}");
    }
    app.stop().await;
}

/// Pages carry a Content-Security-Policy whose nonce is the one on their own scripts (so
/// only the hydration scripts run), and every response says nosniff and a referrer policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_carry_a_content_security_policy_with_their_scripts_nonce() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let page = http
        .get(format!("{}/login", app.base))
        .send()
        .await
        .unwrap();
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    assert!(page.headers().contains_key("referrer-policy"));
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("'wasm-unsafe-eval'"), "{csp}");
    let script_src = csp
        .split(';')
        .find(|d| d.trim().starts_with("script-src"))
        .unwrap();
    assert!(!script_src.contains("unsafe-inline"), "{script_src}");
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|r| r.split('\'').next())
        .expect("a nonce")
        .to_string();
    let html = page.text().await.unwrap();
    let scripts = html.matches("<script").count();
    let with_nonce = html.matches(&format!("nonce=\"{nonce}\"")).count();
    assert!(
        scripts > 0 && with_nonce >= scripts,
        "{scripts} scripts, {with_nonce} with the nonce"
    );
    // Another request, another nonce.
    let again = http
        .get(format!("{}/login", app.base))
        .send()
        .await
        .unwrap();
    assert!(!again.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains(&nonce));
    // Sign-out is a POST under the same-origin check.
    let cross = http
        .post(format!("{}/logout", app.base))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
    let api = http
        .get(format!("{}/public/v1/openapi.json", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(api.headers()["x-content-type-options"], "nosniff");
    app.stop().await;
}
