//! Hostile receivers: no customer's endpoint, however it answers (or fails to), can stop
//! or slow another project's deliveries, or take more than its share of the dispatcher.

mod common;

/// These tests measure latencies and claim times; run side by side, each one's load
/// (300,000-row inserts, hostile receivers) would be the other's noise.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use common::*;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// The ways a receiver can misbehave, each served by a raw TCP server on loopback.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// Accepts the connection and never answers.
    Silent,
    /// Sends its status line a byte a second (slowloris).
    Trickle,
    /// Answers with 1 MiB of headers.
    HugeHeaders,
    /// Answers 200 with a body that never ends.
    EndlessBody,
    /// Redirects to the cloud metadata address.
    RedirectToPrivate,
    /// 429 with a Retry-After hundreds of thousands of years away.
    AbsurdRetryAfter,
    /// 429 with Retry-After values that mean nothing.
    MalformedRetryAfter,
    /// 500 with NUL characters in its body.
    NulBytes,
}

const ALL: [Hostile; 8] = [
    Hostile::Silent,
    Hostile::Trickle,
    Hostile::HugeHeaders,
    Hostile::EndlessBody,
    Hostile::RedirectToPrivate,
    Hostile::AbsurdRetryAfter,
    Hostile::MalformedRetryAfter,
    Hostile::NulBytes,
];

async fn hostile_server(kind: Hostile) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let n = served.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(answer(kind, socket, n));
        }
    });
    url
}

async fn answer(kind: Hostile, socket: TcpStream, n: usize) {
    let (mut rd, mut wr) = socket.into_split();
    // Drain the request for as long as the connection lives, so closing never resets it.
    let drain = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        while matches!(rd.read(&mut buf).await, Ok(n) if n > 0) {}
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    let simple = |head: String| format!("{head}Content-Length: 0\r\nConnection: close\r\n\r\n");
    let result: std::io::Result<()> = async {
        match kind {
            Hostile::Silent => tokio::time::sleep(Duration::from_secs(3600)).await,
            Hostile::Trickle => {
                for b in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" {
                    wr.write_all(&[*b]).await?;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
            Hostile::HugeHeaders => {
                wr.write_all(b"HTTP/1.1 200 OK\r\n").await?;
                let line = format!("X-Padding: {}\r\n", "a".repeat(1000));
                for _ in 0..1050 {
                    wr.write_all(line.as_bytes()).await?;
                }
                wr.write_all(b"Content-Length: 0\r\n\r\n").await?;
            }
            Hostile::EndlessBody => {
                wr.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    .await?;
                let chunk = format!("4000\r\n{}\r\n", "x".repeat(0x4000));
                loop {
                    wr.write_all(chunk.as_bytes()).await?;
                }
            }
            Hostile::RedirectToPrivate => {
                let head = "HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/latest/meta-data\r\n";
                wr.write_all(simple(head.into()).as_bytes()).await?;
            }
            Hostile::AbsurdRetryAfter => {
                let value = ["10000000000000", "99999999999999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT"][n % 3];
                let head = format!("HTTP/1.1 429 Too Many Requests\r\nRetry-After: {value}\r\n");
                wr.write_all(simple(head).as_bytes()).await?;
            }
            Hostile::MalformedRetryAfter => {
                let value = ["soon", "-5", "1e9", "Sun, 99 Foo 2026 99:99:99 GMT", "\u{1}\u{2}"][n % 5];
                let head = format!("HTTP/1.1 429 Too Many Requests\r\nRetry-After: {value}\r\n");
                wr.write_all(simple(head).as_bytes()).await?;
            }
            Hostile::NulBytes => {
                wr.write_all(b"HTTP/1.1 500 Oops\r\nContent-Length: 5\r\nConnection: close\r\n\r\na\x00b\x00c")
                    .await?;
            }
        }
        Ok(())
    }
    .await;
    let _ = result;
    let _ = wr.shutdown().await;
    drain.abort();
}

/// Sends `count` events to the healthy project at `per_second` and returns the
/// ingest-to-receipt latencies in milliseconds, sorted.
async fn healthy_latencies(
    app: &TestApp,
    project: i64,
    receiver: &Receiver,
    count: usize,
    per_second: u64,
) -> Vec<f64> {
    let before = receiver.seen().len();
    let mut sent: HashMap<String, Instant> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_millis(1000 / per_second));
    for i in 0..count {
        tick.tick().await;
        let at = Instant::now();
        let id = app
            .ingest(project, "order.paid", serde_json::json!({ "n": i }))
            .await;
        sent.insert(id, at);
    }
    let seen = receiver
        .wait_for(before + count, Duration::from_secs(30))
        .await;
    assert_eq!(seen.len() - before, count, "every healthy event arrives");
    let mut latencies: Vec<f64> = seen[before..]
        .iter()
        .filter_map(|r| {
            let at = sent.get(header(r, "x-event-id"))?;
            Some(r.at.duration_since(*at).as_secs_f64() * 1000.0)
        })
        .collect();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    latencies
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn hostile_config(cfg: &mut app::cfg::Config) {
    cfg.concurrency = 64;
    cfg.per_endpoint_concurrency = 4;
    cfg.project_concurrency = 24;
    cfg.read_timeout = Duration::from_secs(3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_receivers_neither_stop_nor_slow_another_project() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let app = TestApp::spawn_with(hostile_config).await;
    let (healthy, _) = app.project("business").await;
    let receiver = Receiver::start().await;
    app.endpoint(healthy, &receiver.url).await;

    // Warm the connection pool, then measure without hostile traffic.
    healthy_latencies(&app, healthy, &receiver, 20, 50).await;
    let quiet = healthy_latencies(&app, healthy, &receiver, 200, 40).await;

    // One hostile project: four endpoints of every kind, and a steady stream of events.
    let (hostile, _) = app.project("business").await;
    let mut hostile_endpoints = Vec::new();
    for kind in ALL {
        for _ in 0..4 {
            let url = hostile_server(kind).await;
            hostile_endpoints.push((app.endpoint(hostile, &url).await.0, kind));
        }
    }
    for i in 0..40 {
        app.ingest(hostile, "order.paid", serde_json::json!({ "h": i }))
            .await;
    }
    // Watch the shares while the healthy project is measured again.
    let pool = app.pool.clone();
    let watch = tokio::spawn(async move {
        let (mut max_endpoint, mut max_project) = (0i64, 0i64);
        for _ in 0..100 {
            let (e, p): (Option<i64>, Option<i64>) = sqlx::query_as(
                "SELECT (SELECT max(n) FROM (SELECT count(*) n FROM deliveries WHERE status = 'in_flight' GROUP BY endpoint_id) a),
                        (SELECT max(n) FROM (SELECT count(*) n FROM deliveries WHERE status = 'in_flight' GROUP BY project_id) b)",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            max_endpoint = max_endpoint.max(e.unwrap_or(0));
            max_project = max_project.max(p.unwrap_or(0));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (max_endpoint, max_project)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let busy = healthy_latencies(&app, healthy, &receiver, 200, 40).await;
    let (max_endpoint, max_project) = watch.await.unwrap();

    println!(
        "healthy project, 200 events at 40/s: p50 {:.1} ms / p99 {:.1} ms alone; p50 {:.1} ms / p99 {:.1} ms beside 32 hostile endpoints",
        percentile(&quiet, 0.5),
        percentile(&quiet, 0.99),
        percentile(&busy, 0.5),
        percentile(&busy, 0.99)
    );
    println!("most in flight at once: one endpoint {max_endpoint}, one project {max_project}");
    assert!(max_endpoint <= 4, "an endpoint held {max_endpoint} slots");
    assert!(max_project <= 24, "a project held {max_project} slots");
    assert!(
        percentile(&busy, 0.5) < percentile(&quiet, 0.5) + 50.0,
        "median latency beside hostile receivers"
    );
    assert!(
        percentile(&busy, 0.99) < 1000.0,
        "p99 beside hostile receivers"
    );

    // What became of the hostile attempts: every outcome recorded, and the Retry-After
    // values that cannot be honoured end the chain instead of breaking the dispatcher.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let kinds: Vec<(i64, String, Option<String>)> = sqlx::query_as(
        "SELECT endpoint_id, status, error_kind FROM deliveries
         WHERE project_id = $1 AND status NOT IN ('pending', 'in_flight')",
    )
    .bind(hostile)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let kind_of: HashMap<i64, Hostile> = hostile_endpoints.into_iter().collect();
    let outcomes = |k: &str| -> Vec<(String, Option<String>)> {
        kinds
            .iter()
            .filter(|(ep, _, _)| format!("{:?}", kind_of[ep]) == k)
            .map(|(_, s, e)| (s.clone(), e.clone()))
            .collect()
    };
    let absurd = outcomes("AbsurdRetryAfter");
    println!("absurd Retry-After outcomes: {absurd:?}");
    assert!(
        absurd
            .iter()
            .all(|(s, e)| s == "dead_letter" || e.as_deref() != Some("http_status")),
        "an absurd Retry-After ends the chain: {absurd:?}"
    );
    assert!(outcomes("MalformedRetryAfter")
        .iter()
        .any(|(s, _)| s == "failed"));
    // The redirect is never followed: its answer dead-letters at once (a connection the
    // test server closed under a reused one may also fail first, and is retried).
    let redirects = outcomes("RedirectToPrivate");
    assert!(
        redirects.iter().all(|(s, e)| s != "succeeded"
            && (s == "dead_letter" || e.as_deref() != Some("http_status"))),
        "{redirects:?}"
    );
    assert!(redirects
        .iter()
        .any(|(s, e)| s == "dead_letter" && e.as_deref() == Some("http_status")));
    let silent = outcomes("Silent");
    assert!(
        silent.iter().all(|(_, e)| e.as_deref() == Some("timeout")),
        "{silent:?}"
    );
    let trickle = outcomes("Trickle");
    assert!(
        trickle.iter().all(|(_, e)| e.as_deref() == Some("timeout")),
        "{trickle:?}"
    );
    assert!(!outcomes("HugeHeaders").is_empty());
    // An endless body is cut at the cap and the answer counts. On a loaded machine a
    // stream can also outlast the read timeout, which is retried like any timeout; what
    // may never happen is an attempt that hangs, or a body stored past the cap.
    let endless = outcomes("EndlessBody");
    let endless_ids: Vec<i64> = kind_of
        .iter()
        .filter(|(_, k)| matches!(k, Hostile::EndlessBody))
        .map(|(id, _)| *id)
        .collect();
    let errors: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT status, error FROM deliveries
         WHERE endpoint_id = ANY($1) AND status NOT IN ('succeeded', 'pending', 'in_flight')",
    )
    .bind(&endless_ids)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    println!(
        "endless-body attempts: {} finished, errors {errors:?}",
        endless.len()
    );
    assert!(
        endless
            .iter()
            .all(|(s, e)| s == "succeeded" || e.as_deref() == Some("timeout")),
        "an endless body is cut, and the answer counts: {endless:?}"
    );
    assert!(endless.iter().any(|(s, _)| s == "succeeded"));
    let longest: Option<i32> = sqlx::query_scalar(
        "SELECT max(octet_length(response_body)) FROM deliveries WHERE project_id = $1 AND status = 'succeeded'",
    )
    .bind(hostile)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(longest, Some(64 * 1024), "the stored body stops at the cap");
    let nul: Option<String> = sqlx::query_scalar(
        "SELECT response_body FROM deliveries WHERE project_id = $1 AND response_status = 500 LIMIT 1",
    )
    .bind(hostile)
    .fetch_optional(&app.pool)
    .await
    .unwrap()
    .flatten();
    assert_eq!(
        nul.as_deref(),
        Some("a\u{FFFD}b\u{FFFD}c"),
        "NULs stored as text"
    );
    app.stop().await;
}

/// The finding as it was: receivers answering 429 with `Retry-After: 10000000000000`
/// made each attempt's task panic, its row stayed held, and once the held rows filled
/// the dispatcher it never claimed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absurd_retry_after_does_not_stop_delivery_for_everyone() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let app = TestApp::spawn_with(|cfg| {
        cfg.concurrency = 4; // at most 8 held rows: a handful of leaks would stop it
        cfg.project_concurrency = 8;
    })
    .await;
    let (hostile, _) = app.project("business").await;
    for _ in 0..8 {
        let url = hostile_server(Hostile::AbsurdRetryAfter).await;
        app.endpoint(hostile, &url).await;
    }
    for i in 0..5 {
        app.ingest(hostile, "order.paid", serde_json::json!({ "h": i }))
            .await;
    }
    let (other, _) = app.project("business").await;
    let receiver = Receiver::start().await;
    app.endpoint(other, &receiver.url).await;
    for i in 0..10 {
        app.ingest(other, "order.paid", serde_json::json!({ "n": i }))
            .await;
    }
    let seen = receiver.wait_for(10, Duration::from_secs(20)).await;
    assert_eq!(seen.len(), 10, "the other project's events all arrive");
    let dead: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries WHERE project_id = $1 AND status = 'dead_letter'",
    )
    .bind(hostile)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(dead, 40, "every absurd Retry-After ends its chain");
    app.stop().await;
}

/// A bug inside one attempt (here: a panic injected before the send) is recorded as an
/// internal failure and retried; its slot and row are freed and the next attempts flow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_inside_an_attempt_leaks_no_slot_and_no_row() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = TestDb::new().await;
    let mut cfg = test_config(&db.url);
    cfg.concurrency = 2;
    let cfg = Arc::new(cfg);
    let probe: server::dispatcher::Probe = Arc::new(|row| {
        if row.target_url.contains("/boom") {
            panic!("injected fault");
        }
    });
    let (stop, rx) = tokio::sync::watch::channel(false);
    let dispatcher = server::dispatcher::Dispatcher::new(
        db.pool.clone(),
        cfg.clone(),
        Arc::new(server::metrics::Metrics::default()),
    )
    .with_probe(probe);
    let running = tokio::spawn(dispatcher.run(rx));
    let app = TestApp::spawn_on(db, |_| {}, false).await;

    let (project, _) = app.project("business").await;
    let receiver = Receiver::start().await;
    let boom_url = format!("{}/boom", receiver.url.trim_end_matches("/hook"));
    app.endpoint(project, &boom_url).await;
    let mut boom_events = Vec::new();
    for i in 0..10 {
        boom_events.push(
            app.ingest(project, "order.paid", serde_json::json!({ "b": i }))
                .await,
        );
    }
    let (other, _) = app.project("business").await;
    let healthy = Receiver::start().await;
    app.endpoint(other, &healthy.url).await;
    for i in 0..10 {
        app.ingest(other, "order.paid", serde_json::json!({ "n": i }))
            .await;
    }
    assert_eq!(
        healthy.wait_for(10, Duration::from_secs(15)).await.len(),
        10
    );
    // Each panicking chain runs its schedule (4 attempts) and dead-letters.
    for event in &boom_events {
        let attempts = app.settled(event, Duration::from_secs(20)).await;
        assert_eq!(attempts.len(), 4, "{attempts:?}");
        assert!(attempts.iter().all(|a| a.3.as_deref() == Some("internal")));
        assert_eq!(attempts.last().unwrap().1, "dead_letter");
    }
    assert!(receiver.seen().is_empty());
    let _ = stop.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(10), running).await;
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE status = 'in_flight'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(left, 0, "no row left held");
    app.stop().await;
}

/// Median milliseconds of a claim that finds another project's one due row, released
/// after each, by a worker in which the `busy` endpoints are at their share, on a
/// connection set up as the dispatcher's own.
async fn claim_median_ms(pool: &sqlx::PgPool, busy: &[i64]) -> f64 {
    let claims = server::dispatcher::queue::claim_pool(pool);
    claim_median_ms_on(&claims, busy, 1).await
}

/// Median milliseconds of a claim on `pool` that takes `expect` rows (released after
/// each), by a worker in which the `busy` endpoints are at their share.
async fn claim_median_ms_on(pool: &sqlx::PgPool, busy: &[i64], expect: usize) -> f64 {
    claim_median_ms_holding(pool, busy, 16, expect).await
}

/// [`claim_median_ms_on`], the `busy` endpoints holding `holding` rows each.
async fn claim_median_ms_holding(
    pool: &sqlx::PgPool,
    busy: &[i64],
    holding: i64,
    expect: usize,
) -> f64 {
    use server::dispatcher::queue;
    let held = vec![holding; busy.len()];
    let caps = queue::Caps {
        per_endpoint: 16,
        per_project: 128,
        endpoints: busy,
        endpoint_held: &held,
        projects: &[],
        project_held: &[],
        throttled_held: false,
        backlogged: false,
        sole_project_room: None,
        pass_over: None,
    };
    let mut times = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let rows = queue::claim_due(pool, "probe", 200, Duration::from_secs(30), &caps)
            .await
            .unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(rows.len(), expect, "only these rows are sendable");
        let held: Vec<_> = rows.iter().map(|r| (r.id, r.created_at)).collect();
        queue::release(pool, "probe", &held).await.unwrap();
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    times[times.len() / 2]
}

/// A disabled endpoint's waiting attempts (what auto-disable leaves after days of a busy
/// endpoint's events) are parked out of the claim's index: 300,000 of them do not slow
/// the claim that finds another project's attempt, and enabling the endpoint resumes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_endpoints_backlog_costs_the_claim_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (held_project, _) = app.project("business").await;
    let (held_endpoint, _) = app.endpoint(held_project, "http://127.0.0.1:9/hook").await;
    let held_event = app
        .ingest(held_project, "order.paid", serde_json::json!({}))
        .await;
    let (other, _) = app.project("business").await;
    app.endpoint(other, "http://127.0.0.1:9/other").await;
    app.ingest(other, "order.paid", serde_json::json!({})).await;
    // The held endpoint's one row is due too: disable it before measuring.
    let access = app::auth::system_access(held_project, "test");
    let disable = |enabled| app::db::endpoints::EndpointPatch {
        url: None,
        event_types: None,
        description: None,
        enabled: Some(enabled),
        rate_limit: None,
    };
    app::db::endpoints::update(&app.pool, &access, held_endpoint, disable(false))
        .await
        .unwrap();
    let without = claim_median_ms(&app.pool, &[]).await;

    // 300,000 attempts of the held endpoint, all due, then the endpoint disabled again.
    app::db::endpoints::update(&app.pool, &access, held_endpoint, disable(true))
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                     trigger, status, scheduled_at, request_id)
         SELECT $1, $2, 'order.paid', $3, 'http://127.0.0.1:9/hook', 1, 'auto', 'pending',
                now() - interval '1 hour' + g * interval '1 ms', 'req_backlog_' || g
         FROM generate_series(1, 300000) g",
    )
    .bind(held_project)
    .bind(&held_event)
    .bind(held_endpoint)
    .execute(&app.pool)
    .await
    .unwrap();
    let started = Instant::now();
    app::db::endpoints::update(&app.pool, &access, held_endpoint, disable(false))
        .await
        .unwrap();
    let parking = started.elapsed();
    // Until vacuum removes them, the parked rows' old versions leave dead entries in the
    // due index that a claim steps over; autovacuum clears them within a minute of such
    // a change (300,000 dead rows are far past its threshold). Measured as it then stands.
    let before_vacuum = claim_median_ms(&app.pool, &[]).await;
    // A snapshot older than the parking (an autoanalyze that the insert started while the
    // parking ran, say) would keep vacuum from removing anything: wait for it to end.
    for _ in 0..300 {
        let older: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if older == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sqlx::query("VACUUM ANALYZE delivery_queue")
        .execute(&app.pool)
        .await
        .unwrap();
    let with = claim_median_ms(&app.pool, &[]).await;
    let parked: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE parked AND status = 'pending'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    println!(
        "claim median: {without:.2} ms without the backlog, {with:.2} ms beside 300,000 held attempts \
         ({before_vacuum:.2} ms before vacuum; disabling parked {parked} rows in {parking:?})"
    );
    assert_eq!(parked, 300_001);
    if with >= (without * 3.0).max(without + 5.0) {
        // What the claim's walk does, to read in the log when this fails.
        let plan: Vec<String> = sqlx::query_scalar(
            "EXPLAIN (ANALYZE, BUFFERS)
             SELECT d.id FROM delivery_queue d JOIN endpoints e ON e.id = d.endpoint_id
              WHERE d.status = 'pending' AND NOT d.parked AND d.scheduled_at <= now()
                AND (d.trigger IN ('redirect', 'test') OR (e.enabled AND e.deleted_at IS NULL))
              ORDER BY d.scheduled_at LIMIT 800 FOR UPDATE OF d SKIP LOCKED",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap();
        let stats: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT relname::text, n_live_tup, n_dead_tup FROM pg_stat_user_tables WHERE relname LIKE 'deliver%' AND n_live_tup + n_dead_tup > 0",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap();
        println!("plan:\n{}\ntables: {stats:?}", plan.join("\n"));
    }
    assert!(
        with < (without * 3.0).max(without + 5.0),
        "{with:.2} ms vs {without:.2} ms"
    );

    // Enabled again, the backlog is due again, nothing lost.
    app::db::endpoints::update(&app.pool, &access, held_endpoint, disable(true))
        .await
        .unwrap();
    let (parked, due): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE parked), count(*) FILTER (WHERE NOT parked)
         FROM deliveries WHERE status = 'pending' AND endpoint_id = $1",
    )
    .bind(held_endpoint)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((parked, due), (0, 300_001));
    app.stop().await;
}

/// 100,000 due attempts queued behind an endpoint at its share (one that answers in a
/// second stays there) are passed over whole: the claim that finds another project's
/// attempt costs what it costs without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_backlog_behind_a_busy_endpoint_costs_the_claim_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (busy_project, _) = app.project("business").await;
    let (busy, _) = app.endpoint(busy_project, "http://127.0.0.1:9/busy").await;
    let busy_event = app
        .ingest(busy_project, "order.paid", serde_json::json!({}))
        .await;
    let (other, _) = app.project("business").await;
    app.endpoint(other, "http://127.0.0.1:9/other").await;
    app.ingest(other, "order.paid", serde_json::json!({})).await;
    let without = claim_median_ms(&app.pool, &[busy]).await;
    // The busy endpoint with room for 7 more, on the dispatcher's claim connection.
    let claims = server::dispatcher::queue::claim_pool(&app.pool);
    let room_without = claim_median_ms_holding(&claims, &[busy], 9, 2).await;

    sqlx::query(
        "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                     trigger, status, scheduled_at, request_id)
         SELECT $1, $2, 'order.paid', $3, 'http://127.0.0.1:9/busy', 1, 'auto', 'pending',
                now() - interval '1 hour' + g * interval '1 ms', 'req_deep_' || g
         FROM generate_series(1, 100000) g",
    )
    .bind(busy_project)
    .bind(&busy_event)
    .bind(busy)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE delivery_queue")
        .execute(&app.pool)
        .await
        .unwrap();
    let with = claim_median_ms(&app.pool, &[busy]).await;
    let room_with = claim_median_ms_holding(&claims, &[busy], 9, 8).await;
    println!(
        "claim median: {without:.2} ms without the backlog, {with:.2} ms beside 100,000 due attempts of a busy endpoint; \
         with room for 7 of them: {room_without:.2} ms and {room_with:.2} ms"
    );
    assert!(
        room_with < (room_without * 3.0).max(room_without + 5.0),
        "{room_with:.2} ms vs {room_without:.2} ms"
    );
    assert!(
        with < (without * 3.0).max(without + 5.0),
        "{with:.2} ms vs {without:.2} ms"
    );
    app.stop().await;
}

/// A burst lands between two ANALYZEs: the queue holds 100,000 due attempts
/// while its statistics still say it is empty (the state of every queue table after a
/// burst). A plan built on those statistics reads every due row and sorts them to take a
/// few; the dispatcher's claim connection walks the due index in order whatever they say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_between_two_analyzes_does_not_slow_the_claim() {
    use server::dispatcher::queue;
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (project, _) = app.project("business").await;
    let (endpoint, _) = app.endpoint(project, "http://127.0.0.1:9/burst").await;
    let event = app
        .ingest(project, "order.paid", serde_json::json!({}))
        .await;
    // Statistics of an almost empty queue, kept as they are.
    sqlx::query("ANALYZE delivery_queue")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("ALTER TABLE delivery_queue SET (autovacuum_enabled = off)")
        .execute(&app.pool)
        .await
        .unwrap();
    let claims = queue::claim_pool(&app.pool);
    let without = claim_median_ms_on(&claims, &[], 1).await;
    let burst = |from: i64, to: i64| {
        sqlx::query(
            "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                         trigger, status, scheduled_at, request_id)
             SELECT $1, $2, 'order.paid', $3, 'http://127.0.0.1:9/burst', 1, 'auto', 'pending',
                    now() - interval '1 minute' + g * interval '0.1 ms', 'req_burst_' || g
             FROM generate_series($4::bigint, $5::bigint) g",
        )
        .bind(project)
        .bind(&event)
        .bind(endpoint)
        .bind(from)
        .bind(to)
    };
    // A burst just past what one claim reads (800 candidates), then 100,000.
    burst(1, 2_000).execute(&app.pool).await.unwrap();
    let small = claim_median_ms_on(&claims, &[], 16).await;
    burst(2_001, 100_000).execute(&app.pool).await.unwrap();
    let with = claim_median_ms_on(&claims, &[], 16).await;
    // The same claim on an ordinary connection, planned from those statistics.
    let plain = claim_median_ms_on(&app.pool, &[], 16).await;
    println!(
        "claim median: {without:.2} ms before the burst, {small:.2} ms beside 2,000 due attempts and \
         {with:.2} ms beside 100,000 that the statistics do not know of ({plain:.2} ms on an \
         ordinary connection)"
    );
    assert!(
        with < (small * 2.0).max(small + 5.0),
        "{with:.2} ms beside 100,000 vs {small:.2} ms beside 2,000"
    );
    app.stop().await;
}

/// Events sent through the API many at once go straight to the dispatcher of the
/// process that takes them, and still within the shares: room promised to requests not
/// yet committed counts like attempts in flight, so a burst of concurrent requests to one
/// endpoint cannot take it, or its project, past its share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_concurrent_requests_stays_within_the_shares() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let app = TestApp::spawn_with(|cfg| {
        cfg.per_endpoint_concurrency = 4;
        cfg.project_concurrency = 8;
    })
    .await;
    let receiver = Receiver::start().await;
    receiver.set_default(Answer::status(200).delay(Duration::from_millis(300)));
    let (project, key) = app.project("business").await;
    for _ in 0..3 {
        app.endpoint(project, &receiver.url).await;
    }
    let pool = app.pool.clone();
    let watch = tokio::spawn(async move {
        let (mut max_endpoint, mut max_project) = (0i64, 0i64);
        for _ in 0..150 {
            let (e, p): (Option<i64>, Option<i64>) = sqlx::query_as(
                "SELECT (SELECT max(n) FROM (SELECT count(*) n FROM deliveries WHERE status = 'in_flight' GROUP BY endpoint_id) a),
                        (SELECT count(*) FROM deliveries WHERE status = 'in_flight')",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            max_endpoint = max_endpoint.max(e.unwrap_or(0));
            max_project = max_project.max(p.unwrap_or(0));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (max_endpoint, max_project)
    });
    let statuses = app.post_events(&key, 60, 32).await;
    assert!(statuses.iter().all(|s| *s == 202));
    let (max_endpoint, max_project) = watch.await.unwrap();
    println!("most in flight at once: one endpoint {max_endpoint}, the project {max_project}");
    assert!(max_endpoint <= 4, "an endpoint held {max_endpoint} slots");
    assert!(max_project <= 8, "the project held {max_project} slots");
    assert!(
        receiver.wait_for(180, Duration::from_secs(30)).await.len() >= 180,
        "every attempt arrives"
    );
    app.stop().await;
}
