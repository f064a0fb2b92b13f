//! Operations: health, metrics, and a graceful stop on SIGTERM.

use crate::common;

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use common::{Answer, Receiver, TestApp, TestDb};

#[tokio::test]
async fn healthz_and_metrics_answer() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;
    app.settled(&event, Duration::from_secs(10)).await;
    let http = reqwest::Client::new();
    let health = http
        .get(format!("{}/healthz", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let metrics = http
        .get(format!("{}/metrics", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("posthorn_attempts_total{outcome=\"succeeded\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("posthorn_attempt_duration_seconds_count 1"));
    assert!(metrics.contains("posthorn_queue_depth 0"));
    assert!(metrics.contains("posthorn_oldest_due_pending_seconds"));
    app.stop().await;
}

#[tokio::test]
async fn sigterm_finishes_in_flight_attempts_and_hands_back_the_rest() {
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(200).delay(Duration::from_millis(800)));
    let (project, _) = app.project("business").await;
    app.endpoint(project, &rx.url).await;
    for _ in 0..40 {
        app.ingest(project, "order.created", serde_json::json!({}))
            .await;
    }
    let child = Command::new(env!("CARGO_BIN_EXE_posthorn"))
        .arg("dispatch")
        .env("DATABASE_URL", &app.db_url)
        .env("POSTHORN_ALLOW_PRIVATE_TARGETS", "true")
        .env("POSTHORN_ENDPOINT_CONCURRENCY", "4")
        .env("POSTHORN_LEASE", "60s")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while rx.seen().is_empty() {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stop_at = Instant::now();
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "exit {:?}", out.status);
    assert!(
        stop_at.elapsed() < Duration::from_secs(10),
        "stopped in {:?}",
        stop_at.elapsed()
    );
    let (in_flight, succeeded, pending): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'in_flight'), count(*) FILTER (WHERE status = 'succeeded'),
                count(*) FILTER (WHERE status = 'pending') FROM deliveries",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        in_flight, 0,
        "nothing is left leased to a stopped dispatcher"
    );
    assert_eq!(
        succeeded as usize,
        rx.seen().len(),
        "every attempt that went out was recorded"
    );
    assert_eq!(succeeded + pending, 40, "the rest wait in the queue");
    app.stop().await;
}

#[tokio::test]
async fn retention_drops_old_days_but_keeps_deliveries_still_waiting() {
    let app = TestApp::spawn().await;
    let live = Receiver::start().await;
    let held = Receiver::start().await;
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &live.url).await;
    let (held_ep, _) = app.endpoint(project, &held.url).await;
    let q = |sql: &'static str| sqlx::query(sql);
    q("UPDATE endpoints SET enabled = false WHERE id = $1")
        .bind(held_ep)
        .execute(&app.pool)
        .await
        .unwrap();
    let event = app
        .ingest(project, "order.created", serde_json::json!({"n": 1}))
        .await;
    live.wait_for(1, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The attempt a disabled endpoint holds (queued before it was disabled).
    sqlx::query(
        "INSERT INTO deliveries (project_id, event_id, event_type, endpoint_id, target_url,
                                 attempt, trigger, status, request_id)
         SELECT project_id, event_id, event_type, $2, $3, 1, 'auto', 'pending', 'req_held'
         FROM deliveries WHERE event_id = $1",
    )
    .bind(&event)
    .bind(held_ep)
    .bind(&held.url)
    .execute(&app.pool)
    .await
    .unwrap();
    // Age the event and both attempts by 20 days, into a partition of their own.
    q("SELECT posthorn_ensure_delivery_partitions(current_date - 20, current_date - 20)")
        .execute(&app.pool)
        .await
        .unwrap();
    for sql in [
        "UPDATE deliveries SET created_at = created_at - interval '20 days' WHERE event_id = $1",
        "UPDATE events SET created_at = created_at - interval '20 days' WHERE event_id = $1",
    ] {
        sqlx::query(sql)
            .bind(&event)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    let swept = app::db::maintenance::sweep(&app.pool, 14).await.unwrap();
    assert!(swept.partitions_dropped >= 1, "{swept:?}");
    let left: Vec<(i64, String)> =
        sqlx::query_as("SELECT endpoint_id, status FROM deliveries WHERE event_id = $1")
            .bind(&event)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        left,
        vec![(held_ep, "pending".to_string())],
        "only the waiting row survives"
    );
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE event_id = $1")
        .bind(&event)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept, 1, "the event of a waiting delivery is kept");
    // Enabled again, the endpoint gets the event it missed.
    q("UPDATE endpoints SET enabled = true WHERE id = $1")
        .bind(held_ep)
        .execute(&app.pool)
        .await
        .unwrap();
    let seen = held.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(seen.len(), 1);
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(body["event_id"], event.as_str());
    assert_eq!(body["data"]["n"], 1);
    app.stop().await;
}
