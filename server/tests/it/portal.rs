//! Portal links: a platform signs its customer into one project's delivery log without a
//! Posthorn account. Links work once and briefly; the session reaches three pages and
//! what its role allows; the pages may be framed by the project's origins only.

#[path = "portal/card_forms.rs"]
mod card_forms;
use crate::common;
#[path = "portal/jar.rs"]
mod jar;
#[path = "portal/sessions.rs"]
mod sessions;

use std::time::Duration;

use common::*;
use reqwest::{header, Method};
use serde_json::{json, Value};

struct Operator<'a> {
    app: &'a TestApp,
    key: String,
}

impl Operator<'_> {
    async fn call(&self, method: Method, path: &str, body: Value) -> (u16, Value) {
        let r = reqwest::Client::new()
            .request(method, format!("{}/operator/v1{path}", self.app.base))
            .bearer_auth(&self.key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    async fn link(&self, project: i64, role: &str) -> String {
        let (s, body) = self
            .call(
                Method::POST,
                &format!("/projects/{project}/portal-links"),
                json!({"user": {"id": "u_7", "email": "ana@customer.example"}, "role": role}),
            )
            .await;
        assert_eq!(s, 201, "{body}");
        body["url"].as_str().unwrap().to_string()
    }
}

async fn operator(app: &TestApp) -> Operator<'_> {
    Operator {
        app,
        key: app::db::operator_keys::create(&app.pool, "portal")
            .await
            .unwrap(),
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Opens a link: its status and the session cookie it set, if any.
async fn open(url: &str) -> (u16, Option<String>) {
    let r = client().get(url).send().await.unwrap();
    let cookie = r
        .headers()
        .get(header::SET_COOKIE)
        .map(|v| v.to_str().unwrap().to_string());
    (r.status().as_u16(), cookie)
}

/// A browser holding a portal session cookie.
struct Portal {
    base: String,
    cookie: String,
}

impl Portal {
    async fn page(&self, path: &str) -> reqwest::Response {
        client()
            .get(format!("{}{path}", self.base))
            .header(header::COOKIE, &self.cookie)
            .send()
            .await
            .unwrap()
    }

    async fn call(&self, name: &str, form: &[(&str, &str)]) -> (u16, String) {
        let r = client()
            .post(format!("{}/api/{name}", self.base))
            .header(header::COOKIE, &self.cookie)
            .form(form)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }
}

async fn signed_in(app: &TestApp, op: &Operator<'_>, project: i64, role: &str) -> Portal {
    let (status, cookie) = open(&op.link(project, role).await).await;
    assert_eq!(status, 303);
    let cookie = cookie.expect("a session cookie");
    for attribute in ["HttpOnly", "Secure", "SameSite=None", "Partitioned"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    Portal {
        base: app.base.clone(),
        cookie: cookie.split(';').next().unwrap().to_string(),
    }
}

#[tokio::test]
async fn links_work_once_and_briefly_and_a_forged_one_makes_no_session() {
    let app = TestApp::spawn().await;
    let op = Operator {
        app: &app,
        key: app::db::operator_keys::create(&app.pool, "portal")
            .await
            .unwrap(),
    };
    let (project, _) = app.project("business").await;
    let url = op.link(project, "member").await;
    assert!(url.starts_with(&format!("{}/portal/", app.base)), "{url}");

    let (s, cookie) = open(&url).await;
    assert_eq!((s, cookie.is_some()), (303, true));
    let (s, cookie) = open(&url).await;
    assert_eq!((s, cookie), (404, None), "a link works once");
    let (s, cookie) = open(&format!("{}/portal/forged-token", app.base)).await;
    assert_eq!((s, cookie), (404, None));

    let expired = op.link(project, "member").await;
    sqlx::query("UPDATE portal_links SET expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .unwrap();
    let (s, cookie) = open(&expired).await;
    assert_eq!((s, cookie), (404, None), "an expired link");

    for bad in [
        json!({"role": "admin"}),
        json!({"role": "member", "expires_in": 3601}),
        json!({"role": "member", "user": {"id": ""}}),
    ] {
        let mut body = json!({"user": {"id": "u_1"}});
        body.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        let (s, answer) = op
            .call(
                Method::POST,
                &format!("/projects/{project}/portal-links"),
                body,
            )
            .await;
        assert_eq!(s, 422, "{bad}: {answer}");
    }
    let (s, _) = op
        .call(
            Method::POST,
            "/projects/999999/portal-links",
            json!({"user": {"id": "u"}, "role": "member"}),
        )
        .await;
    assert_eq!(s, 404);
    app.stop().await;
}

#[tokio::test]
async fn a_portal_session_sees_three_pages_of_its_project_and_acts_as_its_role_allows() {
    let app = TestApp::spawn().await;
    let op = Operator {
        app: &app,
        key: app::db::operator_keys::create(&app.pool, "portal")
            .await
            .unwrap(),
    };
    let (project, key) = app.project("business").await;
    let (other, other_key) = app.project("business").await;
    let receiver = Receiver::start().await;
    app.endpoint(project, &receiver.url).await;
    app.endpoint(other, &receiver.url).await;
    for k in [&key, &other_key] {
        let (s, _) = app
            .api(
                k,
                Method::POST,
                "/events",
                json!({"event": "order.paid", "data": {"n": 1}}),
            )
            .await;
        assert!(s < 300);
    }
    receiver.wait_for(2, Duration::from_secs(10)).await;
    // The receiver has both requests; their outcomes reach the log a moment later.
    let id_of = |p: i64| {
        let pool = app.pool.clone();
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let id = sqlx::query_scalar::<_, i64>(
                    "SELECT id FROM delivery_log WHERE project_id = $1 LIMIT 1",
                )
                .bind(p)
                .fetch_optional(&pool)
                .await
                .unwrap();
                match id {
                    Some(id) => return id,
                    None if std::time::Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(50)).await
                    }
                    None => panic!("no attempt of project {p} in the log"),
                }
            }
        }
    };
    let (mine, theirs) = (
        id_of(project).await.to_string(),
        id_of(other).await.to_string(),
    );
    op.call(
        Method::PATCH,
        &format!("/projects/{project}"),
        json!({"frame_ancestors": ["https://app.example.com", "http://localhost:3000"]}),
    )
    .await;

    let member = signed_in(&app, &op, project, "member").await;
    let page = member.page("/developers/deliveries").await;
    assert_eq!(page.status(), 200);
    let csp = page.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("frame-ancestors https://app.example.com http://localhost:3000"),
        "{csp}"
    );
    assert!(page.headers().get(header::X_FRAME_OPTIONS).is_none());
    let html = page.text().await.unwrap();
    assert!(html.contains("data-testid=\"portal-header\""));
    assert!(!html.contains("data-testid=\"project-switcher\""));
    for hidden in ["/developers/keys", "/developers/team", "/developers/audit"] {
        assert_eq!(member.page(hidden).await.status(), 404, "{hidden}");
    }
    // Retry is the member's; the other project's delivery is unknown to them.
    let (s, body) = member
        .call(
            "retry_delivery",
            &[("project_id", &project.to_string()), ("id", &mine)],
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let (s, _) = member
        .call(
            "retry_delivery",
            &[("project_id", &other.to_string()), ("id", &theirs)],
        )
        .await;
    assert!(s == 403 || s == 404, "{s}");
    let (s, _) = member
        .call(
            "retry_delivery",
            &[("project_id", &project.to_string()), ("id", &theirs)],
        )
        .await;
    assert_eq!(s, 404);
    for (name, form) in [
        ("list_keys", vec![]),
        ("list_members", vec![]),
        ("list_audit", vec![]),
        ("alert_settings", vec![]),
    ] {
        let (s, body) = member.call(name, &form).await;
        assert!(s == 403 || s == 404, "{name}: {s} {body}");
    }
    let manual: String = sqlx::query_scalar("SELECT triggered_by FROM delivery_log WHERE project_id = $1 AND trigger = 'manual_retry' LIMIT 1")
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(manual, "portal:u_7");

    // A viewer reads and changes nothing.
    let viewer = signed_in(&app, &op, project, "viewer").await;
    let (s, body) = viewer
        .call(
            "get_delivery_detail",
            &[("project_id", &project.to_string()), ("id", &mine)],
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let endpoint: String =
        sqlx::query_scalar::<_, i64>("SELECT id FROM endpoints WHERE project_id = $1")
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap()
            .to_string();
    for (name, form) in [
        (
            "retry_delivery",
            vec![("project_id", project.to_string()), ("id", mine.clone())],
        ),
        ("reveal_secret", vec![("id", endpoint.clone())]),
        ("rotate_secret", vec![("id", endpoint.clone())]),
        ("delete_endpoint", vec![("id", endpoint.clone())]),
    ] {
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (s, body) = viewer.call(name, &form).await;
        assert_eq!(s, 403, "{name}: {body}");
    }
    let html = viewer
        .page("/developers/deliveries")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("class=\"role role-viewer\">viewer"),
        "the header names the role: {}",
        html.split("portal-header").nth(1).unwrap_or(&html)
    );
    assert!(
        !html.contains("bulk-retry-button"),
        "a viewer gets no bulk replay"
    );

    // Pages outside the portal keep refusing to be framed.
    let login = client()
        .get(format!("{}/login", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(login.headers()[header::X_FRAME_OPTIONS], "DENY");

    // Deleting the project ends its sessions: the page says so and may be framed.
    op.call(Method::DELETE, &format!("/projects/{project}"), Value::Null)
        .await;
    let ended = member.page("/developers/deliveries").await;
    assert_eq!(ended.status(), 401);
    assert!(ended
        .text()
        .await
        .unwrap()
        .contains("Your session has ended"));
    app.stop().await;
}
