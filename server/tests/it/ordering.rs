//! Ordering keys against real receivers: one key's events go out one chain at a time in
//! the order they were accepted, other keys pass, a dead letter frees the key, manual
//! retries ignore it, disabled endpoints and replays keep the order, keys are checked and
//! batches naming keys in opposite orders never deadlock.

use crate::common;
use app::core::ProjectId;

use std::time::{Duration, Instant};

use common::{ordering::*, TestApp};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_keys_events_go_in_order_while_another_key_passes() {
    let app = TestApp::spawn_with(with_retry("1s,1s,1s")).await;
    let rx = Rx::start().await;
    let api = setup(&app, &rx).await;
    let ids = api
        .batch(vec![
            keyed("order-7", json!({"n": "A", "fail_first": true})),
            keyed("order-7", json!({"n": "B"})),
            keyed("order-7", json!({"n": "C"})),
        ])
        .await;
    let (a, b, c) = (&ids[0], &ids[1], &ids[2]);
    // B and C wait their turn, each behind the event right ahead of it.
    // (The API's list reads up to its commit horizon, which may lag by a moment; the
    // rows themselves, and each delivery read by id, say it at once.)
    let waits: Vec<(i64, String, Option<String>)> = sqlx::query_as(
        "SELECT id, event_id, waits_for FROM deliveries WHERE ordering_key = 'order-7' AND attempt = 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let waiting = |e: &String| waits.iter().find(|w| &w.1 == e).map(|w| (w.0, w.2.clone()));
    assert_eq!(waiting(b).map(|w| w.1), Some(Some(a.clone())), "{waits:?}");
    assert_eq!(waiting(c).map(|w| w.1), Some(Some(b.clone())), "{waits:?}");
    let shown = api
        .get(&format!("/deliveries/{}", waiting(c).unwrap().0))
        .await;
    assert_eq!(shown["waits_for"], b.as_str());
    assert_eq!(shown["ordering_key"], "order-7");
    let d = api.event("order-8", json!({"n": "D"})).await;
    let seen = rx.wait_for(5, Duration::from_secs(20)).await;
    assert_eq!(
        order_of(&seen, &[a, b, c]),
        vec![
            (a.clone(), 1),
            (a.clone(), 2),
            (b.clone(), 1),
            (c.clone(), 1)
        ],
        "one key: A, A again, then B, then C"
    );
    let at = |e: &String, n: u32| seen.iter().position(|s| &s.event == e && s.attempt == n);
    assert!(
        at(&d, 1).unwrap() < at(a, 2).unwrap(),
        "another key's event does not wait for A's retry"
    );
    drained(&app.pool, Duration::from_secs(10)).await;
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE waits_for IS NOT NULL OR parked")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(left, 0, "nothing waits once the key is done");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_letter_frees_its_key_and_manual_retries_ignore_keys() {
    let app = TestApp::spawn_with(with_retry("200ms,200ms")).await;
    let rx = Rx::start().await;
    let api = setup(&app, &rx).await;
    let ids = api
        .batch(vec![
            keyed("k", json!({"n": "X", "fail_always": true})),
            keyed("k", json!({"n": "Y"})),
        ])
        .await;
    let (x, y) = (&ids[0], &ids[1]);
    let seen = rx.wait_for(4, Duration::from_secs(20)).await;
    assert_eq!(
        order_of(&seen, &[x, y]),
        vec![
            (x.clone(), 1),
            (x.clone(), 2),
            (x.clone(), 3),
            (y.clone(), 1)
        ],
        "Y goes once X's chain is dead-lettered"
    );
    drained(&app.pool, Duration::from_secs(10)).await;
    let last: String = sqlx::query_scalar(
        "SELECT status FROM deliveries WHERE event_id = $1 ORDER BY attempt DESC LIMIT 1",
    )
    .bind(x)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(last, "dead_letter");

    // The key is busy for 1.5 s (a slow head, one waiting behind it); a manual retry of X
    // goes out at once all the same, and does not hold back the key's queue.
    let ids = api
        .batch(vec![
            keyed("k", json!({"n": "S", "slow_ms": 1500})),
            keyed("k", json!({"n": "T"})),
        ])
        .await;
    let (s, t) = (&ids[0], &ids[1]);
    rx.wait_for(5, Duration::from_secs(10)).await;
    let dead: i64 = sqlx::query_scalar(
        "SELECT id FROM deliveries WHERE event_id = $1 ORDER BY attempt DESC LIMIT 1",
    )
    .bind(x)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let asked = Instant::now();
    let retried = api
        .post(&format!("/deliveries/{dead}/retry"), json!({}))
        .await;
    assert_eq!(retried["ordering_key"], "k");
    assert_eq!(retried["waits_for"], Value::Null);
    let seen = rx.wait_for(6, Duration::from_secs(10)).await;
    let manual = seen
        .iter()
        .find(|r| &r.event == x && r.attempt == 4)
        .expect("manual retry sent");
    assert!(
        manual.at.duration_since(asked) < Duration::from_secs(2),
        "the manual retry did not wait for the key"
    );
    let seen = rx.wait_for(7, Duration::from_secs(10)).await;
    assert_eq!(
        order_of(&seen, &[s, t]),
        vec![(s.clone(), 1), (t.clone(), 1)]
    );
    app.stop().await;
}

/// Lanes and a disabled endpoint: disabling holds every waiting attempt; enabling again
/// releases the lane's head only, and the rest follow in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_disabled_endpoint_keeps_its_lanes_in_order() {
    let app = TestApp::spawn_with(with_retry("1s,1s")).await;
    let rx = Rx::start().await;
    let api = setup(&app, &rx).await;
    let ids = api
        .batch(vec![
            keyed("k", json!({"n": "A", "slow_ms": 1000})),
            keyed("k", json!({"n": "B"})),
            keyed("k", json!({"n": "C"})),
        ])
        .await;
    rx.wait_for(1, Duration::from_secs(10)).await;
    // A is being answered; the endpoint is disabled meanwhile.
    sqlx::query("UPDATE endpoints SET enabled = false")
        .execute(&app.pool)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(rx.seen().len(), 1, "nothing goes to a disabled endpoint");
    // A's end released B, which stays parked while the endpoint is disabled; C waits.
    let state: Vec<(String, bool, Option<String>)> = sqlx::query_as(
        "SELECT event_id, parked, waits_for FROM deliveries WHERE status = 'pending' ORDER BY lane_seq",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        state,
        vec![
            (ids[1].clone(), true, None),
            (ids[2].clone(), true, Some(ids[1].clone()))
        ]
    );
    sqlx::query("UPDATE endpoints SET enabled = true")
        .execute(&app.pool)
        .await
        .unwrap();
    let seen = rx.wait_for(3, Duration::from_secs(10)).await;
    let order: Vec<&String> = seen.iter().map(|s| &s.event).collect();
    assert_eq!(order, ids.iter().collect::<Vec<_>>());
    app.stop().await;
}

/// A bulk replay joins the end of the key's queue: it waits for the chain in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bulk_replay_joins_the_end_of_its_keys_queue() {
    let app = TestApp::spawn_with(with_retry("1s,1s")).await;
    let rx = Rx::start().await;
    let api = setup(&app, &rx).await;
    let first = api.event("k", json!({"n": "E"})).await;
    rx.wait_for(1, Duration::from_secs(10)).await;
    drained(&app.pool, Duration::from_secs(10)).await;
    let slow = api.event("k", json!({"n": "S", "slow_ms": 1500})).await;
    rx.wait_for(2, Duration::from_secs(10)).await;
    // While S is being answered, replay E (the view: that event's attempts).
    let project: i64 = sqlx::query_scalar("SELECT project_id FROM events WHERE event_id = $1")
        .bind(&first)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let cfg = common::test_config(&app.db_url);
    let filter = app::delivery_filter::DeliveryFilter {
        q: Some(first.clone()),
        ..Default::default()
    };
    app::use_cases::replays::start(
        &app.pool,
        &cfg,
        &app::auth::system_access(ProjectId::new(project), "test"),
        &filter,
    )
    .await
    .unwrap();
    let seen = rx.wait_for(3, Duration::from_secs(15)).await;
    let order: Vec<(&String, u32)> = seen.iter().map(|s| (&s.event, s.attempt)).collect();
    assert_eq!(
        order,
        vec![(&first, 1), (&slow, 1), (&first, 2)],
        "the replay went after S"
    );
    let waited: Option<String> = sqlx::query_scalar(
        "SELECT waits_for FROM deliveries WHERE event_id = $1 AND trigger = 'manual_retry'",
    )
    .bind(&first)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(waited, None, "released once S ended");
    app.stop().await;
}

/// The key is bounded like every text from the wire, and a bad one refuses the event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordering_keys_are_checked() {
    let app = TestApp::spawn().await;
    let rx = Rx::start().await;
    let api = setup(&app, &rx).await;
    let long = "k".repeat(256);
    for (key, why) in [
        (json!(""), "empty"),
        (json!(long), "256 characters"),
        (json!("a\u{0}b"), "NUL"),
        (json!(7), "not a string"),
    ] {
        let r = api
            .client
            .post(format!("{}/public/v1/events", api.base))
            .bearer_auth(&api.key)
            .json(&json!({"event": "order.updated", "data": {}, "ordering_key": key}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{why}");
    }
    // 255 characters, any script, is a key.
    let fine = "ключ".repeat(63) + "abc";
    assert_eq!(fine.chars().count(), 255);
    let id = api.event(&fine, json!({})).await;
    let got = api.get(&format!("/events/{id}")).await;
    assert_eq!(got["ordering_key"], fine.as_str());
    for bad in ["", "a%00b"] {
        let r = api
            .client
            .get(format!(
                "{}/public/v1/deliveries?ordering_key={bad}",
                api.base
            ))
            .bearer_auth(&api.key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "filter {bad:?}");
    }
    let n = api
        .get(&format!(
            "/deliveries?ordering_key={}",
            app::delivery_filter::encode_component(&fine)
        ))
        .await["data"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(n, 1);
    app.stop().await;
}

/// Batches naming the same keys in opposite orders, sent at once: a batch is one
/// transaction, and it locks all its lanes together in one global order before the
/// first joins, so no two batches wait on each other (PostgreSQL would end one with a
/// deadlock error, a 500). Each key's events still go out in acceptance order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_naming_keys_in_opposite_orders_never_deadlock() {
    let app = TestApp::spawn().await;
    let rx = Rx::start().await;
    let api = setup(&app, &rx).await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..16 {
        let api = api.clone();
        tasks.spawn(async move {
            let mut keys = ["k-a", "k-b", "k-c"];
            if i % 2 == 1 {
                keys.reverse();
            }
            let events = keys
                .iter()
                .map(|k| keyed(k, json!({"batch": i, "key": k})))
                .collect();
            api.batch(events).await
        });
    }
    let mut sent = 0;
    while let Some(ids) = tasks.join_next().await {
        sent += ids.unwrap().len();
    }
    assert_eq!(sent, 48);
    let seen = rx.wait_for(48, Duration::from_secs(30)).await;
    assert_eq!(seen.len(), 48);
    // Per key, receipts follow the order the events were stored in.
    for key in ["k-a", "k-b", "k-c"] {
        let stored: Vec<String> =
            sqlx::query_scalar("SELECT event_id FROM events WHERE ordering_key = $1 ORDER BY id")
                .bind(key)
                .fetch_all(&app.pool)
                .await
                .unwrap();
        let received: Vec<String> = seen
            .iter()
            .filter(|s| stored.contains(&s.event))
            .map(|s| s.event.clone())
            .collect();
        assert_eq!(received, stored, "{key}");
    }
    app.stop().await;
}
