//! Keys across processes, custom headers, failing endpoints switched off, and accounts
//! made through invitations.

use crate::common;
use app::core::{EndpointId, ProjectId, UserId};

use std::time::Duration;

use common::{browser::Browser, header, Answer, Receiver, TestApp, TestDb};
use reqwest::Client;
use serde_json::{json, Value};

#[tokio::test]
async fn a_revoked_key_is_refused_at_once_by_another_server_process() {
    let db = TestDb::new().await;
    let url = db.url.clone();
    let a = TestApp::spawn_on(db, |_| {}, false).await;
    let b = TestApp::spawn_on(
        TestDb {
            pool: sqlx::PgPool::connect(&url).await.unwrap(),
            url,
        },
        |_| {},
        false,
    )
    .await;
    let (project, key) = a.project("business").await;
    let http = Client::new();
    let get = |base: String| {
        let (http, key) = (http.clone(), key.clone());
        async move {
            http.get(format!("{base}/public/v1/webhooks"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(get(b.base.clone()).await, 200);
    let used: Option<chrono::DateTime<chrono::Utc>> =
        sqlx::query_scalar("SELECT last_used_at FROM api_keys WHERE project_id = $1")
            .bind(project)
            .fetch_one(&a.pool)
            .await
            .unwrap();
    assert!(used.is_some(), "last used is recorded");
    let key_id: i64 = sqlx::query_scalar("SELECT id FROM api_keys WHERE project_id = $1")
        .bind(project)
        .fetch_one(&a.pool)
        .await
        .unwrap();
    app::db::api_keys::revoke(
        &a.pool,
        &app::auth::system_access(ProjectId::new(project), "test"),
        key_id,
    )
    .await
    .unwrap();
    assert_eq!(
        get(b.base.clone()).await,
        401,
        "the other process refuses it on the very next request"
    );
    assert_eq!(get(a.base.clone()).await, 401);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn custom_headers_reach_the_receiver_and_are_recorded_redacted() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let (_, key) = app.project("business").await;
    let http = Client::new();
    let api = format!("{}/public/v1", app.base);
    let bad = http
        .post(format!("{api}/webhooks"))
        .bearer_auth(&key)
        .json(&json!({"url": rx.url, "events": ["*"], "headers": {"X-Botix-Signature": "forged"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    let hook: Value = http.post(format!("{api}/webhooks")).bearer_auth(&key)
        .json(&json!({"url": rx.url, "events": ["*"], "headers": {"Authorization": "Bearer receiver-token"}}))
        .send().await.unwrap().json().await.unwrap();
    assert_eq!(hook["headers"], json!(["Authorization"]));
    assert!(
        !hook.to_string().contains("receiver-token"),
        "values never come back"
    );
    let ev: Value = http
        .post(format!("{api}/events"))
        .bearer_auth(&key)
        .json(&json!({"event": "a.b", "data": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let event_id = ev["id"].as_str().unwrap();
    app.settled(event_id, Duration::from_secs(10)).await;
    assert_eq!(
        header(&rx.seen()[0], "authorization"),
        "Bearer receiver-token"
    );
    let list: Value = http
        .get(format!("{api}/deliveries?event_id={event_id}"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = list["data"][0]["id"].as_i64().unwrap();
    let detail: Value = http
        .get(format!("{api}/deliveries/{id}"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let headers: Vec<(String, String)> =
        serde_json::from_value(detail["request_headers"].clone()).unwrap();
    assert!(
        headers.contains(&("Authorization".to_string(), "[redacted]".to_string())),
        "{headers:?}"
    );
    assert!(!detail.to_string().contains("receiver-token"));
    app.stop().await;
}

#[tokio::test]
async fn an_endpoint_failing_for_the_whole_window_is_disabled_and_resumes_when_enabled() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let ops = Receiver::start().await;
    let (project, _) = app.project("business").await;
    let (ep, _) = app.endpoint(project, &rx.url).await;
    let (ops_ep, _) = app.endpoint(project, &ops.url).await;
    sqlx::query("UPDATE projects SET ops_endpoint_id = $2 WHERE id = $1")
        .bind(project)
        .bind(ops_ep)
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE endpoints SET event_types = '{only.ops}' WHERE id = $1")
        .bind(ops_ep)
        .execute(&app.pool)
        .await
        .unwrap();
    // Automatic attempts have failed for an hour; a manual retry that succeeded does not count.
    for (ago, status, trigger) in [
        (3600, "failed", "auto"),
        (1800, "dead_letter", "auto"),
        (600, "succeeded", "manual_retry"),
    ] {
        sqlx::query(
            "INSERT INTO events (event_id, project_id, event_type, data) VALUES ($1, $2, 'a.b', '{}')",
        )
        .bind(format!("evt_old{ago:021}")).bind(project).execute(&app.pool).await.unwrap();
        sqlx::query(
            "INSERT INTO deliveries (created_at, project_id, event_id, event_type, endpoint_id, target_url, attempt, trigger, status, request_id, scheduled_at)
             VALUES (now() - make_interval(secs => $1), $2, $3, 'a.b', $4, $5, 1, $6, $7, $8, now() - make_interval(secs => $1))",
        )
        .bind(ago as f64).bind(project).bind(format!("evt_old{ago:021}")).bind(ep).bind(&rx.url).bind(trigger).bind(status)
        .bind(format!("req_old{ago}")).execute(&app.pool).await.unwrap();
    }
    // Not yet past a two-hour window.
    assert_eq!(
        server::maintenance::disable_failing_endpoints(&app.pool, Duration::from_secs(7200))
            .await
            .unwrap(),
        0
    );
    // Past a thirty-minute one: disabled, and the operations endpoint is told.
    assert_eq!(
        server::maintenance::disable_failing_endpoints(&app.pool, Duration::from_secs(1800))
            .await
            .unwrap(),
        1
    );
    let (enabled, reason): (bool, Option<String>) =
        sqlx::query_as("SELECT enabled, disabled_reason FROM endpoints WHERE id = $1")
            .bind(ep)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(!enabled);
    assert!(reason.unwrap().starts_with("auto:"));
    let notices = ops.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(header(&notices[0], "x-event-type"), "endpoint.disabled");
    let body: Value = serde_json::from_slice(&notices[0].body).unwrap();
    assert_eq!(body["data"]["endpoint_id"], ep);

    // New work for it waits while it is disabled, and goes out when it is enabled again.
    sqlx::query("INSERT INTO events (event_id, project_id, event_type, data) VALUES ('evt_waiting000000000000000000', $1, 'a.b', '{}')")
        .bind(project).execute(&app.pool).await.unwrap();
    sqlx::query(
        "INSERT INTO deliveries (project_id, event_id, event_type, endpoint_id, target_url, attempt, trigger, status, request_id)
         VALUES ($1, 'evt_waiting000000000000000000', 'a.b', $2, $3, 1, 'auto', 'pending', 'req_waiting')",
    )
    .bind(project).bind(ep).bind(&rx.url).execute(&app.pool).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        app.attempts("evt_waiting000000000000000000").await[0].1,
        "pending"
    );
    let access = app::auth::system_access(ProjectId::new(project), "test");
    app::db::endpoints::update(
        &app.pool,
        &access,
        EndpointId::new(ep),
        app::db::endpoints::EndpointPatch {
            url: None,
            event_types: None,
            description: None,
            enabled: Some(true),
            rate_limit: None,
        },
    )
    .await
    .unwrap();
    rx.set_default(Answer::status(200));
    let done = app
        .settled("evt_waiting000000000000000000", Duration::from_secs(10))
        .await;
    assert_eq!(done[0].1, "succeeded");
    app.stop().await;
}

/// An owner who can invite: (project id, the owner's access).
async fn inviting_project(app: &TestApp) -> (i64, app::auth::Access) {
    let (project, _) = app.project("business").await;
    let owner: i64 = sqlx::query_scalar("SELECT user_id FROM memberships WHERE project_id = $1")
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let owner = app::db::users::get(&app.pool, UserId::new(owner))
        .await
        .unwrap()
        .unwrap();
    let access = app::auth::authorize(
        &app.pool,
        &owner,
        ProjectId::new(project),
        app::core::permissions::Action::ManageTeam,
    )
    .await
    .unwrap();
    (project, access)
}

/// The finding: both callers found no account, and the slower one's insert handed it
/// the faster one's row, so it was signed in to an account whose password it never
/// gave. Two invitations to one address (from two projects, or the same link twice) are
/// accepted at the same moment by two browsers with different passwords.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_people_accepting_invitations_to_one_address_at_once_make_one_account() {
    let app = TestApp::spawn_with(|_| {}).await;
    let (_, first) = inviting_project(&app).await;
    let (_, second) = inviting_project(&app).await;
    for round in 0..6 {
        let email = format!("race-{round}-{}@example.com", ulid::Ulid::new()).to_lowercase();
        let token_a = app::use_cases::team::invite(&app.pool, &first, &email)
            .await
            .unwrap();
        // Even rounds: two invitations; odd rounds: the same link in both browsers.
        let token_b = if round % 2 == 0 {
            app::use_cases::team::invite(&app.pool, &second, &email)
                .await
                .unwrap()
        } else {
            token_a.clone()
        };
        let (a, b) = (Browser::new(&app), Browser::new(&app));
        let (pass_a, pass_b) = (format!("password-a-{round}"), format!("password-b-{round}"));
        let form_a = [("token", token_a.as_str()), ("password", pass_a.as_str())];
        let form_b = [("token", token_b.as_str()), ("password", pass_b.as_str())];
        let (answer_a, answer_b) = tokio::join!(
            a.call("accept_invitation", &form_a),
            b.call("accept_invitation", &form_b),
        );
        let won = [answer_a.0 < 400, answer_b.0 < 400];
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "round {round}: exactly one of the two makes the account: {answer_a:?} {answer_b:?}"
        );
        let (winner, loser) = if won[0] { (&a, &b) } else { (&b, &a) };
        let (winner_pass, loser_pass) = if won[0] {
            (&pass_a, &pass_b)
        } else {
            (&pass_b, &pass_a)
        };
        let (loser_answer, loser_token) = if won[0] {
            (&answer_b, &token_b)
        } else {
            (&answer_a, &token_a)
        };
        assert!(
            loser_answer
                .1
                .contains("An account with this e-mail exists")
                || loser_answer.1.contains("already has an account")
                || loser_answer.1.contains("unknown, used or expired"),
            "round {round}: the refusal says why: {loser_answer:?}"
        );
        assert_eq!(loser.viewer().await, "null", "round {round}: no session");
        assert!(winner.viewer().await.contains(&email));
        let check = Browser::new(&app);
        assert!(
            check.login(&email, winner_pass).await,
            "round {round}: the winner's password"
        );
        assert!(!Browser::new(&app).login(&email, loser_pass).await);

        // The loser's invitation is still good for the account, once signed in.
        if token_a != token_b {
            let (status, body) = check
                .call("accept_invitation", &[("token", loser_token)])
                .await;
            assert!(status < 400, "round {round}: {status} {body}");
        }
    }
    app.stop().await;
}

/// Roles change from the team page's server function: a member becomes an owner and the
/// first owner a member; the last owner stays one, a member changes no role, a role is
/// owner or member, and every change is audited.
#[tokio::test]
async fn roles_change_and_the_last_owner_stays_one() {
    let app = TestApp::spawn_with(|_| {}).await;
    let (project, owner) = inviting_project(&app).await;
    let email = format!("member-{}@example.com", ulid::Ulid::new()).to_lowercase();
    let token = app::use_cases::team::invite(&app.pool, &owner, &email)
        .await
        .unwrap();
    let member = Browser::new(&app);
    let form = [("token", token.as_str()), ("password", "member-password")];
    let (status, body) = member.call("accept_invitation", &form).await;
    assert!(status < 400, "{status} {body}");
    let role_of = |who: String| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>(
                "SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id
                  WHERE m.project_id = $1 AND lower(u.email) = $2",
            )
            .bind(project)
            .bind(who)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let me = owner.email.to_lowercase();

    let last = app::use_cases::team::set_role(&app.pool, &owner, &me, "member").await;
    assert!(
        last.as_ref()
            .unwrap_err()
            .to_string()
            .contains("last owner"),
        "{last:?}"
    );
    let (status, _) = member
        .call(
            "set_member_role",
            &[("email", email.as_str()), ("role", "owner")],
        )
        .await;
    assert_eq!(status, 403, "a member changes no role, their own included");
    assert_eq!(role_of(email.clone()).await, "member");
    let odd = app::use_cases::team::set_role(&app.pool, &owner, &email, "admin").await;
    assert!(
        matches!(odd, Err(app::error::AppError::Invalid(_))),
        "{odd:?}"
    );

    app::use_cases::team::set_role(&app.pool, &owner, &email, "owner")
        .await
        .unwrap();
    app::use_cases::team::set_role(&app.pool, &owner, &me, "member")
        .await
        .unwrap();
    assert_eq!(role_of(email.clone()).await, "owner");
    assert_eq!(role_of(me.clone()).await, "member");
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE project_id = $1 AND action = 'member.role'",
    )
    .bind(project)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(audited, 2);
    app.stop().await;
}
