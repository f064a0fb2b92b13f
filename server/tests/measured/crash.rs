//! Crash safety with real processes: `kill -9` of a dispatcher mid-flight, and two
//! dispatchers on one database.

use crate::common;

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

/// `posthorn serve` on a free port with a 2 s lease (and `extra`), once it answers; the
/// process and its base URL.
async fn serve(db_url: &str, extra: &[(&str, &str)]) -> (Child, String) {
    let port = common::process::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_posthorn"));
    cmd.arg("serve")
        .env("DATABASE_URL", db_url)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("POSTHORN_ALLOW_PRIVATE_TARGETS", "true")
        .env("POSTHORN_LEASE", "2s")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let server = common::process::started(&mut cmd, &base).await;
    (server, base)
}

/// A second dispatcher, run until every event is delivered (its leases left to expire).
async fn deliver_the_rest(app: &TestApp, events: i64, within: Duration) {
    let mut second = dispatcher(&app.db_url, &[]);
    all_delivered(&app.pool, events, within).await;
    second.kill().unwrap();
    second.wait().unwrap();
}

/// One header of every request the receiver saw.
fn seen_header(rx: &Receiver, name: &str) -> HashSet<String> {
    rx.seen()
        .iter()
        .map(|r| header(r, name).to_string())
        .collect()
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
    let _alone = crate::shared().await;
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
    let _alone = crate::shared().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let rx = Receiver::start().await;
    // Slow enough answers that the work outlasts the second process's start (at 5 ms
    // the first dispatcher could finish all of it alone).
    rx.set_default(Answer::status(200).delay(Duration::from_millis(50)));
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

/// `posthorn serve` hands a fresh event's attempts straight to its own dispatcher,
/// already leased to it. Killed after the ingest committed but before those attempts
/// were sent, it loses none of them: their lease runs out and another dispatcher sends
/// them, with the request ids they were given.
#[tokio::test]
async fn a_server_killed_after_handing_off_attempts_loses_none() {
    let _alone = crate::shared().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(200).delay(Duration::from_millis(1500)));
    let (project, key) = app.project("business").await;
    app.endpoint(project, &rx.url).await;
    // Two attempts at a time (room for four held): of six events, two are sent, two are
    // handed over and wait for a slot, two wait in the queue.
    let (mut server, base) = serve(&app.db_url, &[("POSTHORN_DISPATCH_CONCURRENCY", "2")]).await;
    let http = reqwest::Client::new();
    let n = 6;
    for i in 0..n {
        let r = http
            .post(format!("{base}/public/v1/events"))
            .bearer_auth(&key)
            .json(&serde_json::json!({ "event": "order.created", "data": { "i": i } }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
    }
    rx.wait_for(2, Duration::from_secs(10)).await;
    server.kill().unwrap(); // SIGKILL: nothing is handed back
    server.wait().unwrap();
    let seen = seen_header(&rx, "x-request-id");
    let leased: Vec<String> = sqlx::query_scalar(
        "SELECT request_id FROM deliveries WHERE status = 'in_flight' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let unsent: Vec<&String> = leased.iter().filter(|r| !seen.contains(*r)).collect();
    assert!(
        !unsent.is_empty(),
        "some attempts were handed over and not yet sent when the server died: {leased:?} leased, {seen:?} seen"
    );

    deliver_the_rest(&app, n, Duration::from_secs(60)).await;
    let delivered = seen_header(&rx, "x-request-id");
    for r in &unsent {
        assert!(
            delivered.contains(*r),
            "{r} was sent after the lease ran out"
        );
    }
    let events = seen_header(&rx, "x-event-id");
    assert_eq!(events.len() as i64, n, "every event reached the receiver");
    app.stop().await;
}

/// Concurrent requests' lone events are committed together by `posthorn serve`'s group
/// writers. Killed while such requests come in, the server loses no event it accepted:
/// every `202` answered is delivered, by another dispatcher once the leases run out.
#[tokio::test]
async fn a_server_killed_while_grouping_requests_loses_no_accepted_event() {
    let _alone = crate::shared().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(200).delay(Duration::from_millis(50)));
    let (project, key) = app.project("business").await;
    app.endpoint(project, &rx.url).await;
    let (mut server, base) = serve(&app.db_url, &[]).await;
    let http = reqwest::Client::new();
    // 32 requests at a time, until the server dies under them (or 600 are sent).
    let sender = {
        let (http, base, key) = (http.clone(), base.clone(), key.clone());
        tokio::spawn(async move {
            use futures::StreamExt;
            futures::stream::iter(0..600u32)
                .map(|i| {
                    let request = http
                        .post(format!("{base}/public/v1/events"))
                        .bearer_auth(&key)
                        .json(&serde_json::json!({ "event": "order.created", "data": { "i": i } }));
                    async move {
                        let r = request.send().await.ok()?;
                        if r.status() != 202 {
                            return None;
                        }
                        let v: serde_json::Value = r.json().await.ok()?;
                        v["id"].as_str().map(str::to_string)
                    }
                })
                .buffer_unordered(32)
                .take_while(|r| std::future::ready(r.is_some()))
                .filter_map(std::future::ready)
                .collect::<Vec<String>>()
                .await
        })
    };
    rx.wait_for(20, Duration::from_secs(20)).await;
    server.kill().unwrap(); // SIGKILL, with requests mid-way
    server.wait().unwrap();
    let accepted = sender.await.unwrap();
    assert!(accepted.len() >= 20, "{} accepted", accepted.len());
    let stored = count(&app.pool, "SELECT count(*) FROM events").await;
    assert!(stored >= accepted.len() as i64);

    deliver_the_rest(&app, stored, Duration::from_secs(90)).await;
    let delivered = seen_header(&rx, "x-event-id");
    let lost: Vec<&String> = accepted
        .iter()
        .filter(|e| !delivered.contains(*e))
        .collect();
    assert!(lost.is_empty(), "accepted and never delivered: {lost:?}");
    app.stop().await;
}
