//! Per-endpoint throttle: attempts to an endpoint with a `rate_limit` start at least
//! `1/rate_limit` s apart (timing: `throttle_timing.rs`) without holding back other
//! endpoints, and the limit is set through the API and the cabinet.

use crate::common;
use app::core::ProjectId;

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use common::{Receiver, TestApp};
use serde_json::{json, Value};

async fn api(
    app: &TestApp,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> (u16, Value) {
    app.api(key, method, path, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_endpoint_does_not_hold_back_other_endpoints() {
    let app = TestApp::spawn().await;
    let (slow, fast) = (Receiver::start().await, Receiver::start().await);
    let (project, key) = app.project("business").await;
    let access = app::auth::system_access(ProjectId::new(project), "test");
    let (status, _) = api(
        &app,
        &key,
        reqwest::Method::POST,
        "/webhooks",
        json!({"url": slow.url, "events": ["order.created"], "rate_limit": 1}),
    )
    .await;
    assert_eq!(status, 201);
    for i in 0..200 {
        app.ingest(project, "order.created", json!({ "i": i }))
            .await;
    }
    app::db::endpoints::create(
        &mut app.pool.acquire().await.unwrap(),
        &access,
        app::db::endpoints::NewEndpoint {
            url: &fast.url,
            event_types: &["invoice.paid".into()],
            description: "",
            rate_limit: None,
        },
    )
    .await
    .unwrap();
    let started = std::time::Instant::now();
    for i in 0..50 {
        app.ingest(project, "invoice.paid", json!({ "i": i })).await;
    }
    let seen = fast.wait_for(50, Duration::from_secs(10)).await;
    assert_eq!(seen.len(), 50);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the unthrottled endpoint waited {:?}",
        started.elapsed()
    );
    assert!(slow.seen().len() <= 8, "1/s: {} arrived", slow.seen().len());
    app.stop().await;
}

#[tokio::test]
async fn the_rate_limit_is_set_read_and_lifted_through_the_api() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let post = reqwest::Method::POST;
    let patch = reqwest::Method::PATCH;
    let (s, v) = api(
        &app,
        &key,
        post.clone(),
        "/webhooks",
        json!({"url": "https://example.com/h", "events": ["*"]}),
    )
    .await;
    assert_eq!(
        (s, &v["rate_limit"]),
        (201, &Value::Null),
        "unlimited unless set"
    );
    let path = format!("/webhooks/{}", v["id"]);
    let (s, v) = api(&app, &key, patch.clone(), &path, json!({"rate_limit": 7})).await;
    assert_eq!((s, &v["rate_limit"]), (200, &json!(7)));
    let (s, v) = api(
        &app,
        &key,
        patch.clone(),
        &path,
        json!({"description": "kept"}),
    )
    .await;
    assert_eq!((s, &v["rate_limit"]), (200, &json!(7)), "absent leaves it");
    let (s, v) = api(&app, &key, reqwest::Method::GET, &path, Value::Null).await;
    assert_eq!((s, &v["rate_limit"]), (200, &json!(7)));
    let (s, v) = api(
        &app,
        &key,
        patch.clone(),
        &path,
        json!({"rate_limit": null}),
    )
    .await;
    assert_eq!((s, &v["rate_limit"]), (200, &Value::Null), "null lifts it");
    for bad in [json!(0), json!(-1), json!(10_001), json!(2.5), json!("5")] {
        let (s, v) = api(
            &app,
            &key,
            patch.clone(),
            &path,
            json!({ "rate_limit": bad }),
        )
        .await;
        assert!(s == 400 || s == 422, "{bad}: {s} {v}");
        let (s, _) = api(
            &app,
            &key,
            post.clone(),
            "/webhooks",
            json!({"url": "https://example.com/h", "events": ["*"], "rate_limit": bad}),
        )
        .await;
        assert!(s == 400 || s == 422, "{bad}: {s}");
    }
    app.stop().await;
}

#[tokio::test]
async fn the_cabinet_edit_form_sets_and_clears_the_rate_limit() {
    let app = TestApp::spawn().await;
    let email = format!("owner-{}@example.com", ulid::Ulid::new());
    let user = app::db::users::upsert(&app.pool, &email, "owner-password", "user")
        .await
        .unwrap();
    let project = app::db::projects::create(&app.pool, "Shop", "business", user.id)
        .await
        .unwrap();
    let (ep, _) = app
        .endpoint(project.id.get(), "https://example.com/h")
        .await;
    let http = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let call = |name: &'static str, form: Vec<(&'static str, String)>| {
        let http = http.clone();
        let base = app.base.clone();
        async move {
            let r = http
                .post(format!("{base}/api/{name}"))
                .form(&form)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (s, body) = call(
        "login",
        vec![
            ("email", email.clone()),
            ("password", "owner-password".into()),
        ],
    )
    .await;
    assert!(s < 400, "{s} {body}");
    let limit = || async {
        sqlx::query_scalar::<_, Option<i32>>("SELECT rate_limit FROM endpoints WHERE id = $1")
            .bind(ep)
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    let (s, body) = call(
        "update_endpoint",
        vec![("id", ep.to_string()), ("rate_limit", "12".into())],
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(limit().await, Some(12));
    // The older form without the field (and the Enable/Disable button) leaves it alone.
    let (s, _) = call(
        "update_endpoint",
        vec![("id", ep.to_string()), ("enabled", "true".into())],
    )
    .await;
    assert_eq!((s, limit().await), (200, Some(12)));
    let (s, body) = call(
        "update_endpoint",
        vec![("id", ep.to_string()), ("rate_limit", "0".into())],
    )
    .await;
    assert_eq!(s, 422, "{body}");
    let (s, _) = call(
        "update_endpoint",
        vec![("id", ep.to_string()), ("rate_limit", "unlimited".into())],
    )
    .await;
    assert_eq!(
        (s, limit().await),
        (200, None),
        "\"unlimited\" lifts the limit"
    );
    app.stop().await;
}

/// Disabling, enabling or deleting a throttled endpoint parks or ends its waiting rows
/// while the dispatcher may hold some of them and want the endpoint's row for its slots:
/// neither waits for the other, so no change answers 500 (a deadlock, before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_a_throttled_endpoint_while_it_is_claimed_never_deadlocks() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let (project, key) = app.project("business").await;
    let mut ids = Vec::new();
    for _ in 0..4 {
        let (status, body) = api(
            &app,
            &key,
            reqwest::Method::POST,
            "/webhooks",
            json!({"url": receiver.url, "events": ["order.created"], "rate_limit": 1000}),
        )
        .await;
        assert_eq!(status, 201);
        ids.push(body["id"].as_i64().unwrap());
    }
    for i in 0..1500 {
        app.ingest(project, "order.created", json!({ "i": i }))
            .await;
    }
    let mut statuses = Vec::new();
    for round in 0..40 {
        for id in &ids {
            let enabled = round % 2 == 1;
            let (status, _) = api(
                &app,
                &key,
                reqwest::Method::PATCH,
                &format!("/webhooks/{id}"),
                json!({ "enabled": enabled }),
            )
            .await;
            statuses.push(status);
        }
    }
    for id in &ids {
        let (status, _) = api(
            &app,
            &key,
            reqwest::Method::DELETE,
            &format!("/webhooks/{id}"),
            json!({}),
        )
        .await;
        statuses.push(status);
    }
    let failed: Vec<_> = statuses.iter().filter(|s| **s >= 300).collect();
    assert!(failed.is_empty(), "changes that failed: {failed:?}");
    assert!(
        !receiver.seen().is_empty(),
        "the dispatcher was claiming meanwhile"
    );
    app.stop().await;
}

/// A throttled attempt no longer waits for the concurrency slots other attempts hold, so
/// a stalled process is what makes one miss its start: here a probe blocks this
/// single-threaded runtime for 1.5 s inside another endpoint's attempt, and the throttled
/// attempts wake after their slots.
#[tokio::test]
async fn an_attempt_that_misses_its_start_slot_goes_back_and_every_outcome_is_still_recorded() {
    let db = common::TestDb::new().await;
    let cfg = Arc::new(common::test_config(&db.url));
    let stalled = Arc::new(AtomicBool::new(false));
    let probe: server::dispatcher::Probe = {
        let stalled = stalled.clone();
        Arc::new(move |row| {
            if row.of.target_url.ends_with("/stall") && !stalled.swap(true, Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1500));
            }
        })
    };
    let metrics = Arc::new(server::metrics::Metrics::default());
    let (stop, rx) = tokio::sync::watch::channel(false);
    let dispatcher = server::dispatcher::Dispatcher::new(db.pool.clone(), cfg, metrics.clone())
        .with_probe(probe);
    let running = tokio::spawn(dispatcher.run(rx));
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (stall, throttled) = (Receiver::start().await, Receiver::start().await);
    let (project, key) = app.project("business").await;
    let stall_url = format!("{}/stall", stall.url.trim_end_matches("/hook"));
    let (status, _) = api(
        &app,
        &key,
        reqwest::Method::POST,
        "/webhooks",
        json!({"url": stall_url, "events": ["order.slow"]}),
    )
    .await;
    assert_eq!(status, 201);
    let (status, body) = api(
        &app,
        &key,
        reqwest::Method::POST,
        "/webhooks",
        json!({"url": throttled.url, "events": ["order.created"], "rate_limit": 1}),
    )
    .await;
    assert_eq!(status, 201);
    let throttled_id = body["id"].as_i64().unwrap();
    let mut events = Vec::new();
    for i in 0..2 {
        events.push(
            app.ingest(project, "order.created", json!({ "i": i }))
                .await,
        );
    }
    // Both are booked (1 s apart) before the stall begins.
    for _ in 0..100 {
        let booked: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status <> 'pending'",
        )
        .bind(throttled_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if booked == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let slow_event = app.ingest(project, "order.slow", json!({})).await;
    let arrived = throttled.wait_for(2, Duration::from_secs(15)).await;
    assert_eq!(arrived.len(), 2, "the handed-back attempts are sent again");
    assert!(stalled.load(Ordering::SeqCst));
    assert!(metrics.render().lines().any(|l| {
        l.strip_prefix("posthorn_start_slots_missed_total ")
            .is_some_and(|n| n != "0")
    }));
    // Every outcome is recorded: the hand-backs did not stop the outcome writer.
    let slow_attempts = app.settled(&slow_event, Duration::from_secs(10)).await;
    assert_eq!(slow_attempts.len(), 1);
    for event in &events {
        let attempts = app.settled(event, Duration::from_secs(10)).await;
        assert_eq!(attempts.len(), 1, "handed back, not retried");
        assert_eq!(attempts[0].1, "succeeded");
    }
    // And so is whatever comes after.
    let later = app.ingest(project, "order.created", json!({})).await;
    assert_eq!(app.settled(&later, Duration::from_secs(10)).await.len(), 1);
    assert_eq!(throttled.seen().len(), 3, "each attempt sent once");
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(10), running).await;
    app.stop().await;
}
