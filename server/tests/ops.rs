//! Operations: health, metrics, and a graceful stop on SIGTERM.

mod common;

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
