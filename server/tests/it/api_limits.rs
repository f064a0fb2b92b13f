//! The public API over real HTTP, its limits and batches: rate-limit headers and 429s,
//! a key's limit shared by server processes, plan limits, batches of events, and endpoint
//! changes reaching every server process.

use crate::common;

use std::time::Duration;

use common::{api_calls::Api, Receiver, TestApp, TestDb};
use reqwest::Client;
use serde_json::{json, Value};

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
        "SELECT count(*) FROM events WHERE project_id = $1 AND data->>'n' IN ('4', '5')",
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
