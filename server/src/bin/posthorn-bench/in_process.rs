//! In process: events ingested through the domain function (`app::db::events::ingest`),
//! a real dispatcher sending them to an axum receiver on loopback in the same process,
//! outcomes recorded in PostgreSQL. `throughput` keeps the queue fed with a fan-out;
//! `latency` ingests at a steady rate to one endpoint.

use app::core::ProjectId;
use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use app::{cfg::Config, core::event_type::EventType, db};
use axum::{body::Bytes, extract::State, http::HeaderMap, Router};
use server::{dispatcher::Dispatcher, metrics::Metrics};
use tokio::sync::watch;

use crate::{scratch_db, Mode};

#[derive(Clone, Default)]
struct Receipts {
    count: Arc<AtomicU64>,
    at: Arc<Mutex<HashMap<String, Instant>>>,
    track: bool,
}

async fn receive(State(r): State<Receipts>, headers: HeaderMap, _body: Bytes) -> &'static str {
    r.count.fetch_add(1, Ordering::Relaxed);
    if r.track {
        if let Some(id) = headers.get("x-event-id").and_then(|v| v.to_str().ok()) {
            r.at.lock()
                .unwrap()
                .entry(id.to_string())
                .or_insert_with(Instant::now);
        }
    }
    "ok"
}

/// What both scenarios share: the scratch database, the project whose endpoints all
/// point at the receiver, and what the receiver counted.
struct Bench {
    pool: sqlx::PgPool,
    project_id: i64,
    endpoints: usize,
    receipts: Receipts,
    event_type: EventType,
}

const DATA: &str = r#"{"order_id":"ord_12345","amount":4200,"currency":"EUR","customer":{"id":"cus_1","email":"a@example.com"}}"#;

/// Runs `throughput` or `latency`.
pub async fn run(mode: Mode) {
    let (pool, url) = scratch_db().await;
    let receipts = Receipts {
        track: matches!(mode, Mode::Latency { .. }),
        ..Default::default()
    };
    let target = start_receiver(receipts.clone()).await;
    let endpoints = match mode {
        Mode::Throughput { endpoints, .. } => endpoints,
        Mode::Latency { .. } => 1,
        _ => unreachable!("handled above"),
    };
    let project_id = bench_project(&pool, &target, endpoints).await;
    let (stop_tx, stop_rx) = watch::channel(false);
    let dispatch_pool = db::connect_dispatcher(&url, 16).await.unwrap();
    let dispatcher = tokio::spawn(
        Dispatcher::new(
            dispatch_pool,
            bench_config(&url),
            Arc::new(Metrics::default()),
        )
        .run(stop_rx),
    );
    let bench = Bench {
        pool,
        project_id,
        endpoints,
        receipts,
        event_type: EventType::parse("bench.event").unwrap(),
    };
    match mode {
        Mode::Throughput { seconds, .. } => throughput(&bench, seconds).await,
        Mode::Latency { rate, seconds } => latency(&bench, rate, seconds).await,
        _ => unreachable!("handled above"),
    }
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(30), dispatcher).await;
    bench.pool.close().await;
}

/// The receiver on loopback; returns the URL endpoints send to.
async fn start_receiver(receipts: Receipts) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = format!("http://{}/hook", listener.local_addr().unwrap());
    let app = Router::new().fallback(receive).with_state(receipts);
    tokio::spawn(async move { axum::serve(listener, app).await });
    target
}

/// The environment's settings on the scratch database, loopback targets allowed, and at
/// least 8 attempts in flight per endpoint.
fn bench_config(url: &str) -> Arc<Config> {
    let mut cfg = Config::from_env_with(|k| match k {
        "DATABASE_URL" => Some(url.to_string()),
        "POSTHORN_ALLOW_PRIVATE_TARGETS" => Some("true".into()),
        other => std::env::var(other).ok(),
    })
    .unwrap();
    cfg.per_endpoint_concurrency = cfg.per_endpoint_concurrency.max(8);
    Arc::new(cfg)
}

/// A project with `endpoints` endpoints taking every event to `target`.
async fn bench_project(pool: &sqlx::PgPool, target: &str, endpoints: usize) -> i64 {
    let user = db::users::upsert(pool, "bench@example.com", "bench-password", "user")
        .await
        .unwrap();
    let project = db::projects::create(pool, "Bench", "business", user.id)
        .await
        .unwrap();
    let access = app::auth::system_access(project.id, "bench");
    for _ in 0..endpoints {
        db::endpoints::create(
            &mut pool.acquire().await.unwrap(),
            &access,
            db::endpoints::NewEndpoint {
                url: target,
                event_types: &["*".into()],
                description: "",
                rate_limit: None,
            },
        )
        .await
        .unwrap();
    }
    project.id.get()
}

/// Keeps the queue fed with a fan-out for `seconds`, then waits until every delivery is
/// recorded as succeeded.
async fn throughput(bench: &Bench, seconds: u64) {
    let fanout = bench.endpoints as u64;
    let received = || bench.receipts.count.load(Ordering::Relaxed);
    let start = Instant::now();
    let mut ingested: u64 = 0;
    let mut samples = Vec::new();
    let mut last = (Instant::now(), 0u64);
    while start.elapsed() < Duration::from_secs(seconds) {
        // Ingest while fewer than ~2 s of work is waiting.
        if ingested * fanout - received() < 10_000 {
            ingested += ingest_eight(bench).await;
        } else {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if last.0.elapsed() >= Duration::from_secs(5) {
            let d = received();
            samples.push((d - last.1) as f64 / last.0.elapsed().as_secs_f64());
            last = (Instant::now(), d);
        }
    }
    let received = received();
    let elapsed = start.elapsed().as_secs_f64();
    let target_rows = (ingested * fanout) as i64;
    wait_recorded(&bench.pool, target_rows).await;
    let total = start.elapsed().as_secs_f64();
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = samples.get(samples.len() / 2).copied().unwrap_or(0.0);
    println!("endpoints per event: {}", bench.endpoints);
    println!("events ingested: {ingested}, deliveries: {target_rows}");
    println!(
        "received during the run: {received} in {elapsed:.1} s = {:.0} deliveries/s",
        received as f64 / elapsed
    );
    println!(
        "all recorded as succeeded after {total:.1} s = {:.0} deliveries/s end to end",
        target_rows as f64 / total
    );
    println!(
        "median of 5 s windows: {median:.0} deliveries/s (windows: {})",
        samples
            .iter()
            .map(|s| format!("{s:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Eight events ingested at once; returns how many.
async fn ingest_eight(bench: &Bench) -> u64 {
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (pool, t, project_id) = (
            bench.pool.clone(),
            bench.event_type.clone(),
            bench.project_id,
        );
        tasks.push(tokio::spawn(async move {
            db::events::ingest(&pool, ProjectId::new(project_id), &t, DATA, None)
                .await
                .unwrap()
        }));
    }
    let n = tasks.len() as u64;
    for t in tasks {
        t.await.unwrap();
    }
    n
}

/// Recorded, not just received: waits until the table agrees.
async fn wait_recorded(pool: &sqlx::PgPool, rows: i64) {
    loop {
        let ok: i64 =
            sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE status = 'succeeded'")
                .fetch_one(pool)
                .await
                .unwrap();
        if ok >= rows {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Ingests `rate` events a second for `seconds` to one endpoint, then reports the
/// latency from ingest to receipt and its two halves.
async fn latency(bench: &Bench, rate: u64, seconds: u64) {
    let start = Instant::now();
    let sent = ingest_at_rate(bench, rate, rate * seconds).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let got = bench.receipts.at.lock().unwrap().clone();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let sorted = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    };
    let lat = sorted(
        sent.iter()
            .filter_map(|(id, (at, _))| got.get(id).map(|r| ms(*r - *at)))
            .collect(),
    );
    // The two halves: the ingest transaction (commit included), and commit to receipt.
    let commit = sorted(sent.values().map(|(at, c)| ms(*c - *at)).collect());
    let dispatch = sorted(
        sent.iter()
            .filter_map(|(id, (_, c))| got.get(id).map(|r| ms(r.saturating_duration_since(*c))))
            .collect(),
    );
    let at_pct = |v: &[f64], p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)];
    let pct = |p: f64| at_pct(&lat, p);
    for (name, v) in [
        ("ingest (commit)", &commit),
        ("commit -> receipt", &dispatch),
    ] {
        println!(
            "  {name}: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms",
            at_pct(v, 0.5),
            at_pct(v, 0.9),
            at_pct(v, 0.99)
        );
    }
    println!(
        "rate {rate} events/s for {seconds} s ({:.1} s actual): {} sent, {} received",
        start.elapsed().as_secs_f64(),
        sent.len(),
        lat.len()
    );
    println!(
        "ingest -> receipt latency: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        pct(0.5),
        pct(0.9),
        pct(0.99),
        lat[lat.len() - 1]
    );
}

/// `total` events at `rate` a second, each in a task of its own; returns each event's
/// send and commit instants by its id.
async fn ingest_at_rate(
    bench: &Bench,
    rate: u64,
    total: u64,
) -> HashMap<String, (Instant, Instant)> {
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let mut next = Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..total {
        let now = Instant::now();
        if next > now {
            tokio::time::sleep(next - now).await;
        }
        next += interval;
        let (pool, t, project_id) = (
            bench.pool.clone(),
            bench.event_type.clone(),
            bench.project_id,
        );
        let tx = tx.clone();
        tokio::spawn(async move {
            let at = Instant::now();
            let e = db::events::ingest(&pool, ProjectId::new(project_id), &t, DATA, None)
                .await
                .unwrap();
            let _ = tx.send((e.event_id, at, Instant::now()));
        });
    }
    drop(tx);
    let mut sent = HashMap::new();
    while let Some((id, at, committed)) = rx.recv().await {
        sent.insert(id.to_string(), (at, committed));
    }
    sent
}
