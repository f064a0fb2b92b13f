//! The public API over real HTTP: every route, bad input, isolation, cursors, audit.

use crate::common;
use app::core::ProjectId;

use std::{collections::HashSet, time::Duration};

use common::{api_calls::Api, Receiver, TestApp};
use serde_json::{json, Value};

#[tokio::test]
async fn webhooks_crud_with_validation_and_isolation() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let (_, other_key) = app.project("business").await;
    let api = Api::new(&app, &key);
    let other = Api::new(&app, &other_key);

    let (s, _, v) = api.send("POST", "/webhooks", Some(json!({"url": "https://example.com/h", "events": ["payment.succeeded"], "description": "shop"}))).await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_i64().unwrap();
    assert!(v["secret"].as_str().unwrap().starts_with("whsec_"));

    for (body, code) in [
        (json!({"url": "ftp://example.com", "events": ["*"]}), 422),
        (
            json!({"url": "https://u:p@example.com", "events": ["*"]}),
            422,
        ),
        (json!({"url": "not a url", "events": ["*"]}), 422),
        (
            json!({"url": "https://example.com", "events": ["Payment"]}),
            422,
        ),
        (json!({"url": "https://example.com", "events": []}), 422),
        (
            json!({"url": "https://example.com", "events": ["*"], "surprise": 1}),
            422,
        ),
        (json!({"url": 5, "events": ["*"]}), 422),
    ] {
        let (s, _, v) = api.send("POST", "/webhooks", Some(body.clone())).await;
        assert_eq!(s.as_u16(), code, "{body} -> {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{v}"
        );
        assert!(v["error"]["code"].is_string());
    }
    let res = api
        .http
        .post(format!("{}/webhooks", api.base))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let big = format!(
        r#"{{"url":"https://example.com","events":["*"],"description":"{}"}}"#,
        "x".repeat(300 * 1024)
    );
    let res = api
        .http
        .post(format!("{}/webhooks", api.base))
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);

    let (s, _, v) = api.send("GET", &format!("/webhooks/{id}"), None).await;
    assert_eq!(
        (s.as_u16(), v["url"].as_str()),
        (200, Some("https://example.com/h"))
    );
    assert!(
        v.get("secret").is_none(),
        "the secret is shown at creation only"
    );
    let (s, _, v) = api
        .send(
            "PATCH",
            &format!("/webhooks/{id}"),
            Some(json!({"events": ["*"], "enabled": false})),
        )
        .await;
    assert_eq!((s.as_u16(), v["enabled"].as_bool()), (200, Some(false)));
    let (s, _, v) = api.send("GET", "/webhooks", None).await;
    assert_eq!((s.as_u16(), v["data"].as_array().unwrap().len()), (200, 1));

    // Another project's key sees nothing of it, and cannot touch it.
    for (m, body) in [
        ("GET", None),
        ("PATCH", Some(json!({"enabled": true}))),
        ("DELETE", None),
    ] {
        let (s, _, v) = other.send(m, &format!("/webhooks/{id}"), body).await;
        assert_eq!(s, 404, "{m}: {v}");
        assert_eq!(v["error"]["code"], "not_found");
    }
    assert_eq!(
        other.send("GET", "/webhooks", None).await.2["data"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(api.send("GET", "/webhooks/abc", None).await.0, 404);

    let (s, _, v) = api
        .send("POST", &format!("/webhooks/{id}/rotate-secret"), None)
        .await;
    assert_eq!(s, 200);
    assert!(v["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(
        api.send("DELETE", &format!("/webhooks/{id}"), None).await.0,
        204
    );
    assert_eq!(
        api.send("GET", &format!("/webhooks/{id}"), None).await.0,
        404
    );
    app.stop().await;
}

#[tokio::test]
async fn events_fan_out_are_idempotent_and_private() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let (_, key) = app.project("business").await;
    let (_, other_key) = app.project("business").await;
    let api = Api::new(&app, &key);
    api.send(
        "POST",
        "/webhooks",
        Some(json!({"url": rx.url, "events": ["order.created"]})),
    )
    .await;
    api.send(
        "POST",
        "/webhooks",
        Some(json!({"url": rx.url, "events": ["*"]})),
    )
    .await;
    api.send(
        "POST",
        "/webhooks",
        Some(json!({"url": rx.url, "events": ["other.thing"]})),
    )
    .await;

    let (s, _, v) = api
        .send(
            "POST",
            "/events",
            Some(json!({"event": "order.created", "data": {"n": 1}, "id": "client-1"})),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(v["deliveries"], 2);
    let event_id = v["id"].as_str().unwrap().to_string();
    assert!(event_id.starts_with("evt_") && event_id.len() == 28);
    let (s, _, again) = api
        .send(
            "POST",
            "/events",
            Some(json!({"event": "order.created", "data": {"n": 2}, "id": "client-1"})),
        )
        .await;
    assert_eq!(
        (s.as_u16(), again["id"].as_str()),
        (202, Some(event_id.as_str())),
        "a repeat returns the first event"
    );
    let header_key = api
        .http
        .post(format!("{}/events", api.base))
        .bearer_auth(&key)
        .header("Idempotency-Key", "hdr-1")
        .json(&json!({"event": "order.created", "data": {}}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let header_again = api
        .http
        .post(format!("{}/events", api.base))
        .bearer_auth(&key)
        .header("Idempotency-Key", "hdr-1")
        .json(&json!({"event": "order.created", "data": {}}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(header_key["id"], header_again["id"]);
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(events, 2, "repeats create nothing");
    rx.wait_for(4, Duration::from_secs(10)).await;
    assert_eq!(rx.seen().len(), 4);

    for (body, code) in [
        (json!({"event": "nodot", "data": {}}), 422),
        (json!({"event": "a.b"}), 422),
        (json!({"event": "a.b", "data": {}, "extra": true}), 422),
    ] {
        assert_eq!(
            api.send("POST", "/events", Some(body.clone()))
                .await
                .0
                .as_u16(),
            code,
            "{body}"
        );
    }

    let (s, _, v) = api.send("GET", &format!("/events/{event_id}"), None).await;
    assert_eq!(
        (s.as_u16(), v["id"].as_str(), v["data"]["n"].as_i64()),
        (200, Some(event_id.as_str()), Some(1))
    );
    assert_eq!(
        Api::new(&app, &other_key)
            .send("GET", &format!("/events/{event_id}"), None)
            .await
            .0,
        404
    );

    let (s, _, v) = api
        .send("GET", &format!("/deliveries?event_id={event_id}"), None)
        .await;
    assert_eq!(s, 200);
    let rows = v["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let delivery = rows[0]["id"].as_i64().unwrap();
    let (s, _, d) = api
        .send("GET", &format!("/deliveries/{delivery}"), None)
        .await;
    assert_eq!(s, 200);
    assert!(d["payload"].as_str().unwrap().contains(&event_id));
    assert!(d["request_id"].as_str().unwrap().starts_with("req_"));
    assert_eq!(
        Api::new(&app, &other_key)
            .send("GET", &format!("/deliveries/{delivery}"), None)
            .await
            .0,
        404
    );
    assert_eq!(
        Api::new(&app, &other_key)
            .send("POST", &format!("/deliveries/{delivery}/retry"), None)
            .await
            .0,
        404
    );

    let (s, _, retry) = api
        .send("POST", &format!("/deliveries/{delivery}/retry"), None)
        .await;
    assert_eq!(s, 202, "{retry}");
    assert_eq!(retry["trigger"], "manual_retry");
    assert_ne!(retry["request_id"], d["request_id"]);
    let (s, _, conflict) = api
        .send("POST", &format!("/deliveries/{delivery}/retry"), None)
        .await;
    if s != 409 {
        // The first retry may already have been sent; then a second is allowed.
        assert_eq!(s, 202, "{conflict}");
    }
    assert_eq!(
        api.send("GET", "/deliveries?status=bogus", None).await.0,
        422
    );
    assert_eq!(api.send("GET", "/deliveries?limit=500", None).await.0, 422);
    assert_eq!(api.send("GET", "/deliveries?cursor=zzz", None).await.0, 422);
    assert_eq!(
        api.send("GET", "/events?since=yesterday", None).await.0,
        422
    );
    app.stop().await;
}

#[tokio::test]
async fn polling_by_cursor_sees_every_event_exactly_once_while_they_arrive() {
    let app = TestApp::spawn_with(|_| {}).await;
    let (project, key) = app.project("business").await;
    let api = Api::new(&app, &key);
    let total = 300;
    let writer = {
        let pool = app.pool.clone();
        tokio::spawn(async move {
            let mut expected = Vec::new();
            for i in 0..total {
                // Some transactions start first and commit last, holding their early created_at.
                if i % 25 == 0 {
                    let pool = pool.clone();
                    let slow = tokio::spawn(async move {
                        let mut tx = pool.begin().await.unwrap();
                        let id = format!("evt_slow{:020}", i);
                        sqlx::query("INSERT INTO events (event_id, project_id, event_type, data) VALUES ($1, $2, 'slow.commit', '{}')")
                            .bind(&id).bind(project).execute(&mut *tx).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(400)).await;
                        tx.commit().await.unwrap();
                        id
                    });
                    expected.push(slow);
                }
                let t = app::core::event_type::EventType::parse("poll.test").unwrap();
                let id = app::db::events::ingest(&pool, ProjectId::new(project), &t, "{}", None)
                    .await
                    .unwrap()
                    .event_id;
                expected.push(tokio::spawn(async move { id.to_string() }));
            }
            let mut ids = Vec::new();
            for e in expected {
                ids.push(e.await.unwrap());
            }
            ids
        })
    };
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut idle_rounds = 0;
    while idle_rounds < 5 {
        let path = match &cursor {
            Some(c) => format!("/events?limit=37&cursor={c}"),
            None => "/events?limit=37".to_string(),
        };
        let (s, _, v) = api.send("GET", &path, None).await;
        assert_eq!(s, 200, "{v}");
        let page = v["data"].as_array().unwrap();
        seen.extend(page.iter().map(|e| e["id"].as_str().unwrap().to_string()));
        cursor = Some(
            v["meta"]["next_cursor"]
                .as_str()
                .expect("a cursor on every page")
                .to_string(),
        );
        if page.is_empty() && writer.is_finished() {
            idle_rounds += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let expected: HashSet<String> = writer.await.unwrap().into_iter().collect();
    let unique: HashSet<String> = seen.iter().cloned().collect();
    assert_eq!(seen.len(), unique.len(), "no event twice");
    assert_eq!(unique, expected, "every event once");
    assert_eq!(expected.len(), total + total / 25);
    app.stop().await;
}

/// NUL characters in text columns are refused by PostgreSQL; the API answers 422
/// instead of 500 and stores nothing (`\u0000` inside event data is valid JSON, kept as sent).
#[tokio::test]
async fn values_postgres_cannot_store_are_refused_with_422() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let api = Api::new(&app, &key);
    let (s, _, v) = api
        .send(
            "POST",
            "/webhooks",
            Some(json!({"url": "https://example.com/h", "events": ["*"]})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_i64().unwrap();
    for (method, path, body) in [
        (
            "PATCH",
            format!("/webhooks/{id}"),
            json!({"description": "a\u{0}b"}),
        ),
        (
            "POST",
            "/webhooks".into(),
            json!({"url": "https://example.com/h", "events": ["*"], "description": "\u{0}"}),
        ),
        (
            "POST",
            "/events".into(),
            json!({"event": "order.created", "data": {}, "id": "key\u{0}"}),
        ),
    ] {
        let (s, _, v) = api.send(method, &path, Some(body)).await;
        assert_eq!(s, 422, "{method} {path}: {v}");
        assert_eq!(v["error"]["code"], "invalid");
    }
    let (s, _, v) = api.send("GET", "/events?type=a%00b", None).await;
    assert_eq!(s, 422, "{v}");
    let (_, _, v) = api.send("GET", "/events", None).await;
    assert_eq!(v["data"].as_array().unwrap().len(), 0, "nothing was stored");
    app.stop().await;
}

#[tokio::test]
async fn query_parameters_of_the_wrong_type_get_a_json_422() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let api = Api::new(&app, &key);
    for path in [
        "/events?limit=abc",
        "/deliveries?limit=1.5",
        "/events?limit=0",
    ] {
        let (s, _, v) = api.send("GET", path, None).await;
        assert_eq!(s, 422, "{path}: {v}");
        assert_eq!(v["error"]["code"], "invalid", "{path}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains("limit"),
            "{path}: {v}"
        );
    }
    app.stop().await;
}

/// A filter value the OpenAPI document forbids is refused, not answered with an empty page.
#[tokio::test]
async fn list_filters_the_document_forbids_are_refused() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let api = Api::new(&app, &key);
    for path in [
        "/events?type=nodot",
        "/events?type=Payment.Succeeded",
        "/deliveries?status=done",
    ] {
        let (s, _, v) = api.send("GET", path, None).await;
        assert_eq!(s, 422, "{path}: {v}");
        assert_eq!(v["error"]["code"], "invalid", "{path}");
    }
    assert_eq!(
        api.send("GET", "/events?type=payment.succeeded", None)
            .await
            .0,
        200
    );
    app.stop().await;
}

/// Endpoint changes made through the API are audited like the cabinet's, in the same
/// transaction as the change, and a change that fails leaves no entry.
#[tokio::test]
async fn the_apis_endpoint_changes_appear_in_the_audit_log() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("business").await;
    let api = Api::new(&app, &key);
    let (s, _, v) = api
        .send("POST", "/webhooks", Some(json!({"url": "https://example.com/h", "events": ["*"], "headers": {"Authorization": "Bearer x"}})))
        .await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_i64().unwrap();
    let path = format!("/webhooks/{id}");
    assert_eq!(
        api.send("PATCH", &path, Some(json!({"enabled": false})))
            .await
            .0,
        200
    );
    assert_eq!(
        api.send(
            "PATCH",
            &path,
            Some(json!({"url": "https://example.com/new"}))
        )
        .await
        .0,
        200
    );
    assert_eq!(
        api.send("POST", &format!("{path}/rotate-secret"), None)
            .await
            .0,
        200
    );
    assert_eq!(api.send("DELETE", &path, None).await.0, 204);
    assert_eq!(api.send("DELETE", &path, None).await.0, 404);
    let entries: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT actor, action, target FROM audit_log WHERE project_id = $1 ORDER BY id",
    )
    .bind(project)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let target = format!("endpoint #{id}");
    let expected: Vec<(String, String, String)> = [
        "endpoint.create",
        "endpoint.disable",
        "endpoint.edit",
        "secret.rotate",
        "endpoint.delete",
    ]
    .iter()
    .map(|a| ("api".to_string(), a.to_string(), target.clone()))
    .collect();
    assert_eq!(entries, expected);
    app.stop().await;
}
