//! Crash safety with real processes: `kill -9` of a dispatcher mid-flight, and two
//! dispatchers on one database.

mod common;

use std::{
    collections::{HashMap, HashSet},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::{header, Answer, Receiver, TestApp, TestDb};

fn dispatcher(db_url: &str, extra: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_posthorn"));
    cmd.arg("dispatch")
        .env("DATABASE_URL", db_url)
        .env("POSTHORN_ALLOW_PRIVATE_TARGETS", "true")
        .env("POSTHORN_RETRY_SCHEDULE", "200ms,200ms")
        .env("POSTHORN_LEASE", "2s")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.spawn().expect("start posthorn dispatch")
}

async fn count(pool: &sqlx::PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

/// Waits until every event has a succeeded attempt and nothing is queued or in flight.
async fn all_delivered(pool: &sqlx::PgPool, events: i64, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let done = count(
            pool,
            "SELECT count(DISTINCT event_id) FROM deliveries WHERE status = 'succeeded'",
        )
        .await;
        let open = count(
            pool,
            "SELECT count(*) FROM deliveries WHERE status IN ('pending', 'in_flight')",
        )
        .await;
        if done == events && open == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "after {within:?}: {done}/{events} delivered, {open} still open"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_killed_dispatcher_loses_no_delivery() {
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(200).delay(Duration::from_millis(300)));
    let (project, _) = app.project("business").await;
    app.endpoint(project, &rx.url).await;
    let n = 300;
    for i in 0..n {
        app.ingest(project, "order.created", serde_json::json!({ "i": i }))
            .await;
    }
    let mut first = dispatcher(
        &app.db_url,
        &[
            ("POSTHORN_DISPATCH_CONCURRENCY", "200"),
            ("POSTHORN_ENDPOINT_CONCURRENCY", "200"),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while rx.seen().len() < 50 {
        assert!(
            Instant::now() < deadline,
            "the first dispatcher never got going"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().unwrap(); // SIGKILL: no chance to hand anything back
    first.wait().unwrap();
    let stranded = count(
        &app.pool,
        "SELECT count(*) FROM deliveries WHERE status = 'in_flight'",
    )
    .await;
    assert!(stranded > 0, "the kill should leave attempts in flight");

    let mut second = dispatcher(
        &app.db_url,
        &[
            ("POSTHORN_DISPATCH_CONCURRENCY", "200"),
            ("POSTHORN_ENDPOINT_CONCURRENCY", "200"),
        ],
    );
    all_delivered(&app.pool, n, Duration::from_secs(60)).await;
    second.kill().unwrap();
    second.wait().unwrap();

    let seen = rx.seen();
    let events: HashSet<&str> = seen.iter().map(|r| header(r, "x-event-id")).collect();
    assert_eq!(
        events.len() as i64,
        n,
        "every event reached the receiver at least once"
    );
    // A resend after the lease carries the same request id as the lost attempt.
    let mut by_request: HashMap<&str, HashSet<&str>> = HashMap::new();
    for r in &seen {
        by_request
            .entry(header(r, "x-request-id"))
            .or_default()
            .insert(header(r, "x-event-id"));
    }
    assert!(by_request.values().all(|e| e.len() == 1));
    let resent = seen.len() - by_request.len();
    println!(
        "killed with {stranded} in flight; {resent} attempts were sent again with their request id"
    );
    app.stop().await;
}

#[tokio::test]
async fn two_dispatchers_never_send_the_same_attempt() {
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(200).delay(Duration::from_millis(5)));
    let (project, _) = app.project("business").await;
    for _ in 0..4 {
        app.endpoint(project, &rx.url).await;
    }
    let n = 250;
    for i in 0..n {
        app.ingest(project, "order.created", serde_json::json!({ "i": i }))
            .await;
    }
    let extra = [
        ("POSTHORN_DISPATCH_BATCH", "20"),
        ("POSTHORN_DISPATCH_CONCURRENCY", "32"),
    ];
    let mut a = dispatcher(&app.db_url, &extra);
    let mut b = dispatcher(&app.db_url, &extra);
    all_delivered(&app.pool, n, Duration::from_secs(60)).await;
    let by_worker = count(
        &app.pool,
        "SELECT count(DISTINCT claimed_by) FROM deliveries",
    )
    .await;
    for c in [&mut a, &mut b] {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    let seen = rx.seen();
    assert_eq!(seen.len() as i64, n * 4, "one request per attempt");
    let ids: HashSet<&str> = seen.iter().map(|r| header(r, "x-request-id")).collect();
    assert_eq!(ids.len(), seen.len(), "no attempt sent twice");
    assert_eq!(by_worker, 2, "both dispatchers did work");
    app.stop().await;
}
