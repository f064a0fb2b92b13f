//! Hostile receivers: no customer's endpoint, however it answers (or fails to), can stop
//! or slow another project's deliveries, or take more than its share of the dispatcher.

use crate::common;

/// These tests measure latencies and claim times; run side by side, each one's load
/// (300,000-row inserts, hostile receivers) would be the other's noise.
pub(crate) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
pub(crate) async fn healthy_latencies(
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

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub(crate) fn hostile_config(cfg: &mut app::cfg::Config) {
    cfg.concurrency = 64;
    cfg.per_endpoint_concurrency = 4;
    cfg.project_concurrency = 24;
    cfg.read_timeout = Duration::from_secs(3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_receivers_neither_stop_nor_slow_another_project() {
    let _alone = crate::shared().await;
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
    let _alone = crate::shared().await;
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
    let _alone = crate::shared().await;
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = TestDb::new().await;
    let mut cfg = test_config(&db.url);
    cfg.concurrency = 2;
    let cfg = Arc::new(cfg);
    let probe: server::dispatcher::Probe = Arc::new(|row| {
        if row.of.target_url.contains("/boom") {
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

/// Events sent through the API many at once go straight to the dispatcher of the
/// process that takes them, and still within the shares: room promised to requests not
/// yet committed counts like requests in flight, so a burst of concurrent requests to one
/// endpoint cannot take it, or its project, past its share. Counted where it matters, at
/// the receivers: an attempt whose request has ended stops counting while its outcome is
/// written, so the queue's `in_flight` rows can briefly outnumber the requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_concurrent_requests_stays_within_the_shares() {
    let _alone = crate::shared().await;
    let _turn = ONE_AT_A_TIME.lock().await;
    let app = TestApp::spawn_with(|cfg| {
        cfg.per_endpoint_concurrency = 4;
        cfg.project_concurrency = 8;
    })
    .await;
    let (project, key) = app.project("business").await;
    let all = Arc::new(Concurrent::default());
    let mut endpoints = Vec::new();
    for _ in 0..3 {
        let (url, one) = counting_receiver(all.clone()).await;
        app.endpoint(project, &url).await;
        endpoints.push(one);
    }
    let statuses = app.post_events(&key, 60, 32).await;
    assert!(statuses.iter().all(|s| *s == 202));
    let deadline = Instant::now() + Duration::from_secs(30);
    while all.seen.load(Ordering::SeqCst) < 180 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let max_endpoint = (endpoints.iter())
        .map(|e| e.peak.load(Ordering::SeqCst))
        .max()
        .unwrap_or(0);
    let max_project = all.peak.load(Ordering::SeqCst);
    println!("most requests at once: one endpoint {max_endpoint}, the project {max_project}");
    assert!(
        max_endpoint <= 4,
        "an endpoint had {max_endpoint} requests at once"
    );
    assert!(
        max_project <= 8,
        "the project had {max_project} requests at once"
    );
    assert_eq!(
        all.seen.load(Ordering::SeqCst),
        180,
        "every attempt arrives"
    );
    app.stop().await;
}

/// Requests being answered at once, the most seen, and how many arrived.
#[derive(Default)]
struct Concurrent {
    now: AtomicUsize,
    peak: AtomicUsize,
    seen: AtomicUsize,
}

impl Concurrent {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
        self.seen.fetch_add(1, Ordering::SeqCst);
    }
}

/// A receiver answering 200 after 300 ms, counting its own requests and, in `all`, those
/// of every receiver sharing it.
async fn counting_receiver(all: Arc<Concurrent>) -> (String, Arc<Concurrent>) {
    let one = Arc::new(Concurrent::default());
    let counters = (one.clone(), all);
    let app = axum::Router::new().fallback(move || {
        let (one, all) = counters.clone();
        async move {
            one.enter();
            all.enter();
            tokio::time::sleep(Duration::from_millis(300)).await;
            one.leave();
            all.leave();
            axum::http::StatusCode::OK
        }
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, one)
}
