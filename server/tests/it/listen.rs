//! Listen sessions' side of the queue, without a CLI: the dispatcher and the ingest
//! hand-off never send a session's attempts to its URL (they wait, parked, for the CLI),
//! and a session whose CLI stays away ends after 10 minutes, or at once when more than
//! 1,000 attempts wait for it; its waiting attempts become dead letters. (The CLI itself
//! is tested end to end in sdk/python/tests/test_listen.py.)

use crate::common;
use app::core::EndpointId;

use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::json;

async fn waiting(app: &TestApp, endpoint: i64) -> (i64, i64) {
    sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE parked) FROM delivery_queue
          WHERE endpoint_id = $1 AND status = 'pending'",
    )
    .bind(endpoint)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// POST /listen: (status, answer).
async fn open(app: &TestApp, key: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    app.api(key, Method::POST, "/listen", body).await
}

/// The session's CLI was last heard from `minutes` ago.
async fn last_seen_minutes_ago(app: &TestApp, session: i64, minutes: i32) {
    sqlx::query(
        "UPDATE endpoints SET listen_seen_at = now() - make_interval(mins => $2) WHERE id = $1",
    )
    .bind(session)
    .bind(minutes)
    .execute(&app.pool)
    .await
    .unwrap();
}

async fn dead_letters(app: &TestApp, endpoint: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM delivery_log WHERE endpoint_id = $1 AND status = 'dead_letter'
            AND error_kind = 'endpoint_deleted'",
    )
    .bind(endpoint)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_attempts_wait_for_its_cli_and_end_with_it() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let rx = Receiver::start().await;
    let (s, opened) = open(&app, &key, json!({"forward": rx.url, "name": "away"})).await;
    assert_eq!(s, 201, "{opened}");
    let session = opened["endpoint"]["id"].as_i64().unwrap();
    assert_eq!(
        opened["endpoint"]["destination"],
        json!({"type": "listen", "name": "away", "connected": false, "credentials_set": false})
    );
    // Reattaching by name: the same endpoint and secret, 200.
    let (s, again) = open(&app, &key, json!({"forward": rx.url, "name": "away"})).await;
    assert_eq!(
        (s, &again["endpoint"]["id"], &again["secret"]),
        (200, &opened["endpoint"]["id"], &opened["secret"])
    );

    // Neither the hand-off nor the dispatcher sends them: they wait, parked.
    assert!(app.post_events(&key, 5, 5).await.iter().all(|s| *s == 202));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        rx.seen().is_empty(),
        "nothing goes to the URL without the CLI"
    );
    let (all, parked) = waiting(&app, session).await;
    assert!(all == 5 && parked == all, "{all} waiting, {parked} parked");

    // Ten minutes away: the session ends, what waited becomes dead letters.
    assert_eq!(
        app::use_cases::listen::end_idle(&app.pool).await.unwrap(),
        0
    );
    last_seen_minutes_ago(&app, session, 11).await;
    assert_eq!(
        app::use_cases::listen::end_idle(&app.pool).await.unwrap(),
        1
    );
    let (s, _) = app
        .api(
            &key,
            Method::GET,
            &format!("/webhooks/{session}"),
            json!(null),
        )
        .await;
    assert_eq!(s, 404);
    assert_eq!(waiting(&app, session).await.0, 0);
    assert_eq!(dead_letters(&app, session).await, 5);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_away_with_more_than_a_thousand_waiting_ends_at_once() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let (s, opened) = open(&app, &key, json!({"forward": "http://127.0.0.1:9/x"})).await;
    assert_eq!(s, 201, "{opened}");
    let session = opened["endpoint"]["id"].as_i64().unwrap();
    let batch: Vec<_> = (0..100)
        .map(|i| json!({"event": "order.paid", "data": {"i": i}}))
        .collect();
    for _ in 0..10 {
        let (s, body) = app
            .api(
                &key,
                Method::POST,
                "/events/batch",
                json!({"events": batch}),
            )
            .await;
        assert!(s < 300, "{body}");
    }
    // Away (no sign of its CLI for over 90 s) with 1,000 waiting: the buffer holds them.
    last_seen_minutes_ago(&app, session, 2).await;
    assert_eq!(
        app::use_cases::listen::end_idle(&app.pool).await.unwrap(),
        0
    );
    let (s, body) = app
        .api(
            &key,
            Method::POST,
            "/events",
            json!({"event": "order.paid", "data": {}}),
        )
        .await;
    assert!(s < 300, "{body}");
    assert_eq!(
        app::use_cases::listen::end_idle(&app.pool).await.unwrap(),
        1
    );
    assert_eq!(dead_letters(&app, session).await, 1001);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_out_when_a_session_ends_become_dead_letters_not_strays() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let (s, opened) = open(&app, &key, json!({"forward": "http://127.0.0.1:9/x"})).await;
    assert_eq!(s, 201, "{opened}");
    let session = opened["endpoint"]["id"].as_i64().unwrap();
    assert!(app.post_events(&key, 3, 3).await.iter().all(|s| *s == 202));
    // A session's server holds them when the session is deleted under it…
    let lease = Duration::from_secs(60);
    let held =
        app::db::queue::listen::claim(&app.pool, EndpointId::new(session), "gone-server", 8, lease)
            .await
            .unwrap();
    assert_eq!(held.len(), 3);
    let (s, _) = app
        .api(
            &key,
            Method::DELETE,
            &format!("/webhooks/{session}"),
            json!(null),
        )
        .await;
    assert_eq!(s, 204);
    // …and hands them back as its CLI leaves: housekeeping makes them dead letters.
    let rows: Vec<_> = held.iter().map(|r| (r.id, r.created_at)).collect();
    let back = app::db::queue::listen::hand_back(&app.pool, "gone-server", &rows)
        .await
        .unwrap();
    assert_eq!(back, 3);
    let swept = app::db::maintenance::sweep(&app.pool, 14).await.unwrap();
    assert_eq!(swept.strays_settled, 3);
    assert_eq!(waiting(&app, session).await.0, 0);
    assert_eq!(dead_letters(&app, session).await, 3);
    app.stop().await;
}
