//! In process: events ingested through the domain function (`app::db::events::ingest`),
//! a real dispatcher sending them to an axum receiver on loopback in the same process,
//! outcomes recorded in PostgreSQL. `throughput` keeps the queue fed with a fan-out;
//! `latency` ingests at a steady rate to one endpoint.

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

/// Runs `throughput` or `latency`.
pub async fn run(mode: Mode) {
    let (pool, url) = scratch_db().await;
    let track = matches!(mode, Mode::Latency { .. });
    let receipts = Receipts {
        track,
        ..Default::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = format!("http://{}/hook", listener.local_addr().unwrap());
    let app = Router::new().fallback(receive).with_state(receipts.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let mut cfg = Config::from_env_with(|k| match k {
        "DATABASE_URL" => Some(url.clone()),
        "POSTHORN_ALLOW_PRIVATE_TARGETS" => Some("true".into()),
        other => std::env::var(other).ok(),
    })
    .unwrap();
    cfg.per_endpoint_concurrency = cfg.per_endpoint_concurrency.max(8);
    let cfg = Arc::new(cfg);
    let user = db::users::upsert(&pool, "bench@example.com", "bench-password", "user")
        .await
        .unwrap();
    let project = db::projects::create(&pool, "Bench", "business", user.id)
        .await
        .unwrap();
    let access = app::auth::system_access(project.id, "bench");
    let endpoints = match mode {
        Mode::Throughput { endpoints, .. } => endpoints,
        Mode::Latency { .. } => 1,
        _ => unreachable!("handled above"),
    };
    for _ in 0..endpoints {
        db::endpoints::create(
            &mut pool.acquire().await.unwrap(),
            &access,
            db::endpoints::NewEndpoint {
                url: &target,
                event_types: &["*".into()],
                description: "",
                rate_limit: None,
            },
        )
        .await
        .unwrap();
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let dispatch_pool = db::connect_dispatcher(&url, 16).await.unwrap();
    let dispatcher = tokio::spawn(
        Dispatcher::new(dispatch_pool, cfg.clone(), Arc::new(Metrics::default())).run(stop_rx),
    );
    let event_type = EventType::parse("bench.event").unwrap();
    let data = r#"{"order_id":"ord_12345","amount":4200,"currency":"EUR","customer":{"id":"cus_1","email":"a@example.com"}}"#;

    match mode {
        Mode::Throughput { seconds, .. } => {
            // Keep the queue fed: ingest while fewer than ~2 s of work is waiting.
            let start = Instant::now();
            let mut ingested: u64 = 0;
            let mut samples = Vec::new();
            let mut last = (Instant::now(), 0u64);
            while start.elapsed() < Duration::from_secs(seconds) {
                let done = receipts.count.load(Ordering::Relaxed);
                if ingested * endpoints as u64 - done < 10_000 {
                    let mut tasks = Vec::new();
                    for _ in 0..8 {
                        let pool = pool.clone();
                        let t = event_type.clone();
                        tasks.push(tokio::spawn(async move {
                            db::events::ingest(&pool, project.id, &t, data, None)
                                .await
                                .unwrap()
                        }));
                    }
                    for t in tasks {
                        t.await.unwrap();
                        ingested += 1;
                    }
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                if last.0.elapsed() >= Duration::from_secs(5) {
                    let d = receipts.count.load(Ordering::Relaxed);
                    samples.push((d - last.1) as f64 / last.0.elapsed().as_secs_f64());
                    last = (Instant::now(), d);
                }
            }
            let received = receipts.count.load(Ordering::Relaxed);
            let elapsed = start.elapsed().as_secs_f64();
            // Recorded, not just received: wait until the table agrees.
            let target_rows = (ingested * endpoints as u64) as i64;
            loop {
                let ok: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM deliveries WHERE status = 'succeeded'",
                )
                .fetch_one(&pool)
                .await
                .unwrap();
                if ok >= target_rows {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            let total = start.elapsed().as_secs_f64();
            samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let median = samples.get(samples.len() / 2).copied().unwrap_or(0.0);
            println!("endpoints per event: {endpoints}");
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
        Mode::Latency { rate, seconds } => {
            let mut sent: HashMap<String, (Instant, Instant)> = HashMap::new();
            let interval = Duration::from_secs_f64(1.0 / rate as f64);
            let start = Instant::now();
            let mut next = Instant::now();
            let total = rate * seconds;
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            for _ in 0..total {
                let now = Instant::now();
                if next > now {
                    tokio::time::sleep(next - now).await;
                }
                next += interval;
                let pool = pool.clone();
                let t = event_type.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let at = Instant::now();
                    let e = db::events::ingest(&pool, project.id, &t, data, None)
                        .await
                        .unwrap();
                    let _ = tx.send((e.event_id, at, Instant::now()));
                });
            }
            drop(tx);
            while let Some((id, at, committed)) = rx.recv().await {
                sent.insert(id, (at, committed));
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
            let got = receipts.at.lock().unwrap().clone();
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
                    .filter_map(|(id, (_, c))| {
                        got.get(id).map(|r| ms(r.saturating_duration_since(*c)))
                    })
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
        _ => unreachable!("handled above"),
    }
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(30), dispatcher).await;
    pool.close().await;
}
