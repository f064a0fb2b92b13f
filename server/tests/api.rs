//! The public API over real HTTP: every route, bad input, isolation, limits, cursors.

mod common;

use std::{collections::HashSet, time::Duration};

use common::{Receiver, TestApp, TestDb};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

struct Api {
    http: Client,
    base: String,
    key: String,
}

impl Api {
    fn new(app: &TestApp, key: &str) -> Api {
        Api {
            http: Client::new(),
            base: format!("{}/public/v1", app.base),
            key: key.to_string(),
        }
    }
    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(&self.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let (status, headers) = (res.status(), res.headers().clone());
        let text = res.text().await.unwrap();
        (
            status,
            headers,
            serde_json::from_str(&text).unwrap_or(Value::Null),
        )
    }
}

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
async fn rate_limit_headers_on_every_response_and_429_when_spent() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("trial").await;
    let api = Api::new(&app, &key);
    // Start at the beginning of a calendar minute so the window does not roll mid-test.
    let now = chrono::Utc::now().timestamp();
    if now % 60 > 45 {
        tokio::time::sleep(Duration::from_secs((61 - now % 60) as u64)).await;
    }
    let (s, h, _) = api.send("GET", "/webhooks", None).await;
    assert_eq!(s, 200);
    assert_eq!(h["x-ratelimit-limit"], "30");
    assert_eq!(h["x-ratelimit-remaining"], "29");
    let reset: i64 = h["x-ratelimit-reset"].to_str().unwrap().parse().unwrap();
    assert_eq!(reset % 60, 0);
    assert!(reset > chrono::Utc::now().timestamp());
    let (s, h, _) = api.send("GET", "/webhooks/999999", None).await;
    assert_eq!(
        (s.as_u16(), h["x-ratelimit-remaining"].to_str().unwrap()),
        (404, "28"),
        "errors count and carry the headers"
    );
    for _ in 0..28 {
        api.send("GET", "/webhooks", None).await;
    }
    let (s, h, v) = api.send("GET", "/webhooks", None).await;
    assert_eq!(s, 429, "{v}");
    assert_eq!(h["x-ratelimit-remaining"], "0");
    let wait: i64 = h["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait));

    let anon = Client::new()
        .get(format!("{}/public/v1/webhooks", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status(), 401);
    assert!(anon.headers().contains_key("x-ratelimit-limit"));
    let bad = Client::new()
        .get(format!("{}/public/v1/webhooks", app.base))
        .bearer_auth("phk_wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 401);
    let doc = Client::new()
        .get(format!("{}/public/v1/openapi.json", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(doc.status(), 200);
    let doc: Value = doc.json().await.unwrap();
    assert!(doc["paths"]["/events"]["post"].is_object());
    // The error shape is documented, and every operation lists the errors all can give.
    let error_ref = json!({"$ref": "#/components/schemas/ApiErrorBody"});
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for status in ["401", "422", "429"] {
                assert_eq!(
                    op["responses"][status]["content"]["application/json"]["schema"], error_ref,
                    "{method} {path} {status}"
                );
            }
        }
    }
    assert!(doc["paths"]["/events"]["post"]["responses"]["413"].is_object());
    assert!(doc["paths"]["/events"]["post"]["responses"]["400"].is_object());
    assert!(doc["components"]["schemas"]["ApiErrorBody"].is_object());
    // Lists and single items have response schemas the client libraries are checked against.
    let body_ref = |path: &str, method: &str, status: &str| {
        doc["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]
            ["$ref"]
            .clone()
    };
    assert_eq!(
        body_ref("/events", "get", "200"),
        json!("#/components/schemas/EventPage")
    );
    assert_eq!(
        body_ref("/events/{id}", "get", "200"),
        json!("#/components/schemas/Event")
    );
    assert_eq!(
        body_ref("/deliveries", "get", "200"),
        json!("#/components/schemas/DeliveryPage")
    );
    assert_eq!(
        body_ref("/deliveries/{id}/retry", "post", "202"),
        json!("#/components/schemas/Delivery")
    );
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["PageMeta"]["required"],
        json!(["next_cursor", "has_more"])
    );
    assert_eq!(
        schemas["Event"]["properties"]["event"]["pattern"],
        json!(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
    );
    app.stop().await;
}

#[tokio::test]
async fn two_server_processes_share_one_keys_limit() {
    let db = TestDb::new().await;
    let url = db.url.clone();
    let a = TestApp::spawn_on(db, |_| {}, false).await;
    let b_pool = sqlx::PgPool::connect(&url).await.unwrap();
    let b = TestApp::spawn_on(TestDb { pool: b_pool, url }, |_| {}, false).await;
    let (_, key) = a.project("trial").await;
    let now = chrono::Utc::now().timestamp();
    if now % 60 > 45 {
        tokio::time::sleep(Duration::from_secs((61 - now % 60) as u64)).await;
    }
    let (api_a, api_b) = (Api::new(&a, &key), Api::new(&b, &key));
    let mut ok = 0;
    let mut limited = 0;
    for i in 0..40 {
        let api = if i % 2 == 0 { &api_a } else { &api_b };
        match api.send("GET", "/webhooks", None).await.0.as_u16() {
            200 => ok += 1,
            429 => limited += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((ok, limited), (30, 10), "30 a minute across both processes");
    a.stop().await;
    b.stop().await;
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
                let id = app::db::events::ingest(&pool, project, &t, "{}", None)
                    .await
                    .unwrap()
                    .event_id;
                expected.push(tokio::spawn(async move { id }));
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

/// The operator's plan limits (`POSTHORN_PLAN_LIMITS`) replace the defaults per plan.
#[tokio::test]
async fn plan_limits_come_from_the_operators_setting() {
    let app = TestApp::spawn_with(|cfg| {
        cfg.plan_limits = app::core::ratelimit::PlanLimits::parse("trial=5").unwrap();
    })
    .await;
    let (_, trial) = app.project("trial").await;
    let (_, business) = app.project("business").await;
    let api = Api::new(&app, &trial);
    let mut seen = Vec::new();
    for _ in 0..6 {
        let (s, h, _) = api.send("GET", "/webhooks", None).await;
        assert_eq!(h["x-ratelimit-limit"], "5");
        seen.push((
            s.as_u16(),
            h["x-ratelimit-reset"].to_str().unwrap().to_string(),
        ));
    }
    // Six requests in one calendar minute: the sixth is refused (if a minute boundary
    // fell between them, the count started again and all pass).
    let one_minute = seen.iter().all(|(_, reset)| *reset == seen[0].1);
    let statuses: Vec<u16> = seen.iter().map(|(s, _)| *s).collect();
    if one_minute {
        assert_eq!(statuses, [200, 200, 200, 200, 200, 429]);
    }
    let (_, h, _) = Api::new(&app, &business)
        .send("GET", "/webhooks", None)
        .await;
    assert_eq!(h["x-ratelimit-limit"], "2000");
    app.stop().await;
}

/// `POST /events/batch`: up to 100 events, fanned out in array order, one idempotency
/// key each, one rate-limit unit each; refused whole when an item is bad or the minute's
/// units do not cover it.
#[tokio::test]
async fn a_batch_of_events_is_taken_whole_in_order_and_costs_a_unit_each() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("trial").await;
    let receiver = Receiver::start().await;
    app.endpoint(project, &receiver.url).await;
    let api = Api::new(&app, &key);
    let batch = json!({"events": [
        {"event": "order.created", "data": {"n": 1}, "id": "k1"},
        {"event": "order.paid", "data": {"n": 2}, "id": "k2"},
        {"event": "order.shipped", "data": {"n": 3}},
    ]});
    let (s, h, v) = api.send("POST", "/events/batch", Some(batch.clone())).await;
    assert_eq!(s, 202, "{v}");
    let remaining: u32 = h["x-ratelimit-remaining"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(remaining, 27, "three units for three events");
    let ids: Vec<String> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(v["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["deliveries"] == 1));
    // Stored in array order.
    let stored: Vec<String> = sqlx::query_scalar(
        "SELECT event_id FROM events WHERE project_id = $1 ORDER BY created_at, id",
    )
    .bind(project)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(stored, ids);
    let seen = receiver.wait_for(3, Duration::from_secs(10)).await;
    assert_eq!(seen.len(), 3);

    // The keyed items repeat their first answer; the unkeyed one is new.
    let (s, _, again) = api.send("POST", "/events/batch", Some(batch)).await;
    assert_eq!(s, 202);
    assert_eq!(again["data"][0]["id"], ids[0].as_str());
    assert_eq!(again["data"][1]["id"], ids[1].as_str());
    assert_ne!(again["data"][2]["id"], ids[2].as_str());

    // A key repeated inside one batch (one transaction): the second item answers the
    // first's event, stored once.
    let (s, _, twice) = api
        .send(
            "POST",
            "/events/batch",
            Some(json!({"events": [
                {"event": "order.paid", "data": {"n": 4}, "id": "k4"},
                {"event": "order.paid", "data": {"n": 5}, "id": "k4"},
            ]})),
        )
        .await;
    assert_eq!(s, 202, "{twice}");
    assert_eq!(twice["data"][0]["id"], twice["data"][1]["id"]);
    let k4: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE project_id = $1 AND client_id = 'k4'",
    )
    .bind(project)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(k4, 1);

    // One bad item: nothing stored.
    let (s, _, v) = api
        .send(
            "POST",
            "/events/batch",
            Some(
                json!({"events": [{"event": "ok.one", "data": {}}, {"event": "Bad", "data": {}}]}),
            ),
        )
        .await;
    assert_eq!(s, 422);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("events[1].event"),
        "{v}"
    );
    let (s, _, _) = api
        .send("POST", "/events/batch", Some(json!({"events": []})))
        .await;
    assert_eq!(s, 422);

    // More events than the minute has units: refused whole, the units given back.
    let many: Vec<Value> = (0..40)
        .map(|i| json!({"event": "order.paid", "data": {"i": i}}))
        .collect();
    let (s, h, v) = api
        .send("POST", "/events/batch", Some(json!({"events": many})))
        .await;
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE project_id = $1")
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    // 40 units never fit a trial key's 30.
    assert_eq!(s, 429, "{v}");
    assert!(h.contains_key("retry-after"), "{v}");
    assert_eq!(count, 5, "nothing of the refused batch was stored");
    let (_, h2, _) = api.send("GET", "/webhooks", None).await;
    let left: u32 = h2["x-ratelimit-remaining"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        left >= 18,
        "the batch's units were given back ({left} left)"
    );
    app.stop().await;
}

/// A server process reuses the endpoints it read for an event type while the project's
/// endpoints are unchanged; a change made through another process (or straight in the
/// database) reaches the very next event, whatever that process kept.
#[tokio::test]
async fn endpoint_changes_reach_the_next_event_through_every_server_process() {
    let db = TestDb::new().await;
    let url = db.url.clone();
    let a = TestApp::spawn_on(db, |_| {}, true).await;
    let b_pool = sqlx::PgPool::connect(&url).await.unwrap();
    let b = TestApp::spawn_on(
        TestDb {
            pool: b_pool.clone(),
            url,
        },
        |_| {},
        true,
    )
    .await;
    let (first, second) = (Receiver::start().await, Receiver::start().await);
    let (_, key) = a.project("business").await;
    let (admin, sender) = (Api::new(&a, &key), Api::new(&b, &key));
    let send = |n: i64| {
        let sender = &sender;
        async move {
            let (s, _, v) = sender
                .send(
                    "POST",
                    "/events",
                    Some(json!({"event": "order.created", "data": {"n": n}})),
                )
                .await;
            assert_eq!(s, 202, "{v}");
            v["deliveries"].as_i64().unwrap()
        }
    };
    assert_eq!(send(0).await, 0, "no endpoint yet");
    let (s, _, hook) = admin
        .send(
            "POST",
            "/webhooks",
            Some(json!({"url": first.url, "events": ["order.created"]})),
        )
        .await;
    assert_eq!(s, 201, "{hook}");
    let id = hook["id"].as_i64().unwrap();
    assert_eq!(send(1).await, 1, "a new endpoint");
    assert_eq!(send(2).await, 1, "read again or reused, the same");
    assert_eq!(first.wait_for(2, Duration::from_secs(10)).await.len(), 2);

    admin
        .send(
            "PATCH",
            &format!("/webhooks/{id}"),
            Some(json!({"events": ["order.paid"]})),
        )
        .await;
    assert_eq!(send(3).await, 0, "no longer subscribed");
    admin
        .send(
            "PATCH",
            &format!("/webhooks/{id}"),
            Some(json!({"events": ["*"], "url": second.url})),
        )
        .await;
    assert_eq!(send(4).await, 1, "subscribed to everything");
    let seen = second.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(seen.len(), 1, "sent to the new URL");
    assert_eq!(
        common::header(&seen[0], "webhook-signature")
            .split(' ')
            .count(),
        1
    );

    admin
        .send("POST", &format!("/webhooks/{id}/rotate-secret"), None)
        .await;
    assert_eq!(send(5).await, 1);
    let seen = second.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(
        common::header(&seen[1], "webhook-signature")
            .split(' ')
            .count(),
        2,
        "signed with the new secret and the one it replaced"
    );

    admin
        .send(
            "PATCH",
            &format!("/webhooks/{id}"),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(send(6).await, 0, "disabled");
    let by_hand = |sql: &'static str| {
        let pool = b_pool.clone();
        async move { sqlx::query(sql).bind(id).execute(&pool).await.unwrap() }
    };
    by_hand("UPDATE endpoints SET enabled = true WHERE id = $1").await;
    assert_eq!(send(7).await, 1, "enabled again, by hand in the database");
    by_hand("UPDATE endpoints SET deleted_at = now() WHERE id = $1").await;
    assert_eq!(send(8).await, 0, "deleted");
    assert_eq!(second.wait_for(4, Duration::from_secs(2)).await.len(), 3);
    a.stop().await;
    b.stop().await;
}
