//! Tenant isolation, second round: what one tenant's requests hold while they run. A
//! keyed batch's locks, a batch's transaction held open, a payload PostgreSQL's parser
//! cannot take: none of them may fail, stop or slow another tenant.

use crate::common;
use app::core::ProjectId;

use std::time::Duration;

use common::{Answer, Receiver, TestApp};
use serde_json::{json, Value};

async fn post(app: &TestApp, key: &str, path: &str, body: Value) -> (u16, Value) {
    app.api(key, reqwest::Method::POST, path, body).await
}

async fn status_of(app: &TestApp, event_id: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT status FROM deliveries WHERE event_id = $1 ORDER BY created_at, id")
        .bind(event_id)
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// Finding 4: with ordering keys, one batch of 100 keyed events over a project's 500
/// endpoints took one advisory lock per (endpoint, key) in one transaction, 50,000 of
/// them, past PostgreSQL's shared lock table; after that every tenant's statements
/// failed with "out of shared memory".
#[tokio::test]
async fn a_keyed_batch_over_the_most_endpoints_fails_no_one() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("business").await;
    let (other, other_key) = app.project("business").await;
    // Receivers that answer at once; the batch's 50,000 attempts are not waited for.
    let rx = Receiver::start().await;
    let access = app::auth::system_access(ProjectId::new(project), "test");
    for _ in 0..500 {
        app::db::endpoints::create(
            &mut app.pool.acquire().await.unwrap(),
            &access,
            app::db::endpoints::NewEndpoint {
                url: &rx.url,
                event_types: &["*".into()],
                description: "",
                rate_limit: Some(1),
            },
        )
        .await
        .unwrap();
    }
    let other_rx = Receiver::start().await;
    app.endpoint(other, &other_rx.url).await;
    let events: Vec<Value> = (0..100)
        .map(|i| json!({"event": "order.paid", "data": {"i": i}, "ordering_key": format!("customer_{i}")}))
        .collect();
    let batch = {
        let (base, key) = (app.base.clone(), key.clone());
        tokio::spawn(async move {
            let r = reqwest::Client::new()
                .post(format!("{base}/public/v1/events/batch"))
                .bearer_auth(key)
                .json(&json!({ "events": events }))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.text().await.unwrap())
        })
    };
    // Another tenant's traffic while the batch runs.
    let mut other_ids = Vec::new();
    for i in 0..20 {
        let (s, body) = post(
            &app,
            &other_key,
            "/events",
            json!({"event": "order.paid", "data": {"i": i}}),
        )
        .await;
        assert_eq!(s, 202, "another tenant's event: {body}");
        other_ids.push(body["id"].as_str().unwrap().to_string());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, body) = batch.await.unwrap();
    assert_eq!(status, 202, "the keyed batch: {body}");
    let fanned: i64 =
        sqlx::query_scalar("SELECT sum(deliveries) FROM events WHERE project_id = $1")
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(fanned, 50_000);
    for id in &other_ids {
        app.settled(id, Duration::from_secs(30)).await;
    }
    app.stop().await;
}

/// Finding 5: the outcome writer, which every tenant's attempts go through, waited for a
/// lane's lock while a tenant's batch held it in its transaction: no outcome of anyone
/// was recorded, no slot freed, until that batch ended.
#[tokio::test]
async fn a_batch_held_open_by_one_tenant_does_not_stop_the_outcome_writer() {
    let app = TestApp::spawn().await;
    let (a, a_key) = app.project("business").await;
    let (_b, b_key) = app.project("business").await;
    let a_rx = Receiver::start().await;
    a_rx.script([Answer::status(200).delay(Duration::from_millis(1500))]);
    app.endpoint(a, &a_rx.url).await;
    let b_rx = Receiver::start().await;
    app.endpoint(_b, &b_rx.url).await;

    // The head of lane "k" is being sent (1.5 s).
    let (s, e1) = post(
        &app,
        &a_key,
        "/events",
        json!({"event": "order.paid", "data": {}, "ordering_key": "k"}),
    )
    .await;
    assert_eq!(s, 202, "{e1}");
    assert_eq!(a_rx.wait_for(1, Duration::from_secs(5)).await.len(), 1);

    // A's batch takes lane "k" and then waits, in its transaction, for an idempotency key
    // another transaction is inserting: held open as long as that one lasts.
    // The key as stored (hashed).
    let stored =
        app::db::idempotency::stored_keys(&app.pool, ProjectId::new(a), &[Some("blocker")])
            .await
            .unwrap();
    let mut blocker = app.pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO events (event_id, project_id, event_type, data, client_id, deliveries)
         VALUES ('evt_blocker00000000000000000', $1, 'order.paid', '{}', $2, 0)",
    )
    .bind(a)
    .bind(&stored[0])
    .execute(&mut *blocker)
    .await
    .unwrap();
    let batch = {
        let (base, key) = (app.base.clone(), a_key.clone());
        tokio::spawn(async move {
            let r = reqwest::Client::new()
                .post(format!("{base}/public/v1/events/batch"))
                .bearer_auth(key)
                .json(&json!({"events": [
                    {"event": "order.paid", "data": {"n": 2}, "ordering_key": "k"},
                    {"event": "order.paid", "data": {"n": 3}, "ordering_key": "k2", "id": "blocker"}
                ]}))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        })
    };

    // The head's outcome arrives at the writer while the batch holds its lane; then
    // another tenant's events must still be recorded, not only sent.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let mut b_events = Vec::new();
    for i in 0..3 {
        let (s, body) = post(
            &app,
            &b_key,
            "/events",
            json!({"event": "order.paid", "data": {"i": i}}),
        )
        .await;
        assert_eq!(s, 202, "{body}");
        b_events.push(body["id"].as_str().unwrap().to_string());
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let mut done = true;
        for id in &b_events {
            done &= status_of(&app, id).await == ["succeeded"];
        }
        if done {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            let states: Vec<Vec<String>> =
                futures::future::join_all(b_events.iter().map(|id| status_of(&app, id))).await;
            panic!(
                "another tenant's outcomes were not recorded within 5 s while a batch held a lane \
                 (received {} of 3): {states:?}",
                b_rx.seen().len()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The batch goes on once the other transaction ends, and lane "k" moves on: its
    // second event is delivered after the head.
    blocker.rollback().await.unwrap();
    let (status, body) = batch.await.unwrap();
    assert_eq!(status, 202, "{body}");
    let e2 = body["data"][0]["id"].as_str().unwrap().to_string();
    let attempts = app.settled(&e2, Duration::from_secs(15)).await;
    assert_eq!(attempts.last().unwrap().1, "succeeded", "{attempts:?}");
    assert_eq!(
        status_of(&app, e1["id"].as_str().unwrap()).await,
        ["succeeded"]
    );
    app.stop().await;
}

/// Finding 6: `data` nested 100,000 deep passed the API's checks and failed PostgreSQL's
/// JSON input ("stack depth limit exceeded"): a 500 for its sender, and the whole group
/// statement it shared with other tenants' events failed and was stored again one by one.
#[tokio::test]
async fn data_nested_too_deep_is_refused_before_it_reaches_anyone_elses_group() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("business").await;
    let (other, other_key) = app.project("business").await;
    let rx = Receiver::start().await;
    app.endpoint(project, &rx.url).await;
    app.endpoint(other, &rx.url).await;
    let deep = format!(
        "{{\"event\":\"order.paid\",\"data\":{{\"a\":{}1{}}}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let client = reqwest::Client::new();
    let send_deep = |body: String| {
        client
            .post(format!("{}/public/v1/events", app.base))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    // Sent together with other tenants' events, so they share groups.
    let others = futures::future::join_all((0..40).map(|i| {
        post(
            &app,
            &other_key,
            "/events",
            json!({"event": "order.paid", "data": {"i": i}}),
        )
    }));
    let deeps = futures::future::join_all((0..5).map(|_| send_deep(deep.clone())));
    let (others, deeps) = tokio::join!(others, deeps);
    for (s, body) in &others {
        assert_eq!(*s, 202, "{body}");
    }
    for r in deeps {
        let r = r.unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (422, Some("limit_reached")),
            "{body}"
        );
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("data_depth"));
    }
    let (_, _, failed_groups) = app.group.as_ref().unwrap().counts();
    assert_eq!(failed_groups, 0, "no group of events failed whole");
    // At the limit it is accepted.
    let at_limit = format!(
        "{{\"event\":\"order.paid\",\"data\":{}1{}}}",
        "{\"a\":".repeat(64),
        "}".repeat(64)
    );
    let r = send_deep(at_limit).await.unwrap();
    assert_eq!(r.status().as_u16(), 202);
    app.stop().await;
}
