//! The operator API (`/operator/v1`): who may call it, projects made, changed and deleted
//! through it, their keys and usage. Driven over HTTP against a real server and database.

use crate::common;

use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};

/// An operator call: its status and JSON body (null when none).
async fn op(app: &TestApp, key: &str, method: Method, path: &str, body: Value) -> (u16, Value) {
    let mut r = reqwest::Client::new()
        .request(method, format!("{}/operator/v1{path}", app.base))
        .bearer_auth(key);
    if !body.is_null() {
        r = r.json(&body);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn operator_key(app: &TestApp, name: &str) -> String {
    app::db::operator_keys::create(&app.pool, name)
        .await
        .unwrap()
}

#[tokio::test]
async fn only_operator_keys_open_the_operator_api_and_they_open_nothing_else() {
    let app = TestApp::spawn().await;
    let key = operator_key(&app, "billing").await;
    let (_, project_key) = app.project("business").await;

    let (s, _) = op(&app, &key, Method::GET, "/projects", Value::Null).await;
    assert_eq!(s, 200);
    for wrong in [project_key.as_str(), "pho_forged", ""] {
        let (s, body) = op(&app, wrong, Method::GET, "/projects", Value::Null).await;
        assert_eq!(s, 401, "{wrong}: {body}");
    }
    // An operator key is not a project key.
    let (s, _) = app.api(&key, Method::GET, "/webhooks", Value::Null).await;
    assert_eq!(s, 401);
    // The document is public, the calls are not.
    let doc: Value = reqwest::get(format!("{}/operator/v1/openapi.json", app.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["paths"]["/projects/{id}/portal-links"]["post"].is_object());

    // A revoked key stops at once.
    assert!(app::db::operator_keys::revoke(&app.pool, "billing")
        .await
        .unwrap());
    let (s, _) = op(&app, &key, Method::GET, "/projects", Value::Null).await;
    assert_eq!(s, 401);
    app.stop().await;
}

#[tokio::test]
async fn a_platform_makes_a_tenant_hands_out_its_key_and_deletes_it_with_all_its_data() {
    let app = TestApp::spawn().await;
    let key = operator_key(&app, "signup").await;
    let (s, p) = op(
        &app,
        &key,
        Method::POST,
        "/projects",
        json!({"name": "Acme", "uid": "cus_42", "plan": "business",
               "limits": {"endpoints": 2}, "frame_ancestors": ["https://app.example.com"],
               "brand": {"name": "Acme Hooks", "accent": "#0a7cff"}}),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let id = p["id"].as_i64().unwrap();
    assert_eq!(p["limits"]["endpoints"], 2);
    assert_eq!(p["frame_ancestors"], json!(["https://app.example.com"]));

    // The uid is the platform's own id: unique, and it finds the project.
    let (s, _) = op(
        &app,
        &key,
        Method::POST,
        "/projects",
        json!({"name": "Again", "uid": "cus_42"}),
    )
    .await;
    assert_eq!(s, 409);
    let (s, found) = op(&app, &key, Method::GET, "/projects?uid=cus_42", Value::Null).await;
    assert_eq!((s, found["data"][0]["id"].as_i64()), (200, Some(id)));

    // Bad fields are refused, naming the field.
    for bad in [
        json!({"frame_ancestors": ["https://*.example.com"]}),
        json!({"frame_ancestors": ["http://evil.example.com"]}),
        json!({"frame_ancestors": ["https://a.example.com/path"]}),
        json!({"brand": {"logo_url": "http://cdn.example.com/logo.png"}}),
        json!({"brand": {"accent": "red; background:url(x)"}}),
        json!({"limits": {"endpoints": -1}}),
        json!({"plan": "platinum"}),
    ] {
        let (s, body) = op(
            &app,
            &key,
            Method::PATCH,
            &format!("/projects/{id}"),
            bad.clone(),
        )
        .await;
        assert_eq!(s, 422, "{bad}: {body}");
    }
    let (s, p) = op(
        &app,
        &key,
        Method::PATCH,
        &format!("/projects/{id}"),
        json!({"name": "Acme Inc"}),
    )
    .await;
    assert_eq!((s, p["name"].as_str()), (200, Some("Acme Inc")));

    // Its key works on the public API, and the limit set by the operator holds there.
    let (s, k) = op(
        &app,
        &key,
        Method::POST,
        &format!("/projects/{id}/api-keys"),
        json!({"name": "prod"}),
    )
    .await;
    assert_eq!(s, 201, "{k}");
    let project_key = k["key"].as_str().unwrap().to_string();
    let receiver = Receiver::start().await;
    for i in 0..3 {
        let (s, body) = app
            .api(
                &project_key,
                Method::POST,
                "/webhooks",
                json!({"url": receiver.url, "events": ["*"], "description": i.to_string()}),
            )
            .await;
        assert_eq!(s, if i < 2 { 201 } else { 422 }, "endpoint {i}: {body}");
    }
    let (s, _) = app
        .api(
            &project_key,
            Method::POST,
            "/events",
            json!({"event": "order.paid", "data": {"n": 1}}),
        )
        .await;
    assert!(s == 201 || s == 202, "{s}");
    receiver.wait_for(2, Duration::from_secs(10)).await;

    // Usage is counted apart from the log.
    let today = chrono::Utc::now().date_naive();
    let (s, usage) = op(
        &app,
        &key,
        Method::GET,
        &format!("/projects/{id}/usage?since={today}&until={today}"),
        Value::Null,
    )
    .await;
    assert_eq!(s, 200, "{usage}");
    assert_eq!(usage["events"], 1, "{usage}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, usage) = op(
            &app,
            &key,
            Method::GET,
            &format!("/projects/{id}/usage?since={today}"),
            Value::Null,
        )
        .await;
        if usage["attempts"]["succeeded"] == 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{usage}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (s, _) = op(
        &app,
        &key,
        Method::GET,
        &format!("/projects/{id}/usage?since=yesterday"),
        Value::Null,
    )
    .await;
    assert_eq!(s, 422);

    // Another project's key id is unknown here.
    let (other, _) = app.project("business").await;
    let (_, other_key) = op(
        &app,
        &key,
        Method::POST,
        &format!("/projects/{other}/api-keys"),
        json!({"name": "x"}),
    )
    .await;
    let (s, _) = op(
        &app,
        &key,
        Method::DELETE,
        &format!("/projects/{id}/api-keys/{}", other_key["id"]),
        Value::Null,
    )
    .await;
    assert_eq!(s, 404);

    // Delete: gone at once, key dead, data purged in the background.
    let (s, _) = op(
        &app,
        &key,
        Method::DELETE,
        &format!("/projects/{id}"),
        Value::Null,
    )
    .await;
    assert_eq!(s, 204);
    for (m, path) in [
        (Method::GET, format!("/projects/{id}")),
        (Method::PATCH, format!("/projects/{id}")),
        (Method::GET, format!("/projects/{id}/usage")),
    ] {
        let (s, _) = op(&app, &key, m, &path, json!({"name": "x"})).await;
        assert_eq!(s, 404, "{path}");
    }
    let (s, _) = app
        .api(&project_key, Method::GET, "/webhooks", Value::Null)
        .await;
    assert_eq!(s, 401);
    // The uid is free again for a new customer.
    let (s, _) = op(
        &app,
        &key,
        Method::POST,
        "/projects",
        json!({"name": "Acme again", "uid": "cus_42"}),
    )
    .await;
    assert_eq!(s, 201);
    while app::db::tenants::purge_step(&app.pool, 1000).await.unwrap() > 0 {}
    let left: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM events WHERE project_id = $1) \
              + (SELECT count(*) FROM delivery_log WHERE project_id = $1) \
              + (SELECT count(*) FROM endpoints WHERE project_id = $1) \
              + (SELECT count(*) FROM projects WHERE id = $1)",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(left, 0);
    // What was billed stays.
    let billed: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(events), 0)::bigint FROM usage_events WHERE project_id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(billed, 1);

    // Every call was audited under the key's name.
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE actor = 'operator:signup'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(audited >= 10, "{audited}");
    app.stop().await;
}
