//! Delivery benchmark: events ingested through the domain function, sent by a real
//! dispatcher to a fast receiver on loopback, outcomes recorded in PostgreSQL.
//!
//! In process (ingest through the domain function, receiver in the same process):
//! posthorn-bench throughput --endpoints 100 --seconds 60
//! posthorn-bench latency --rate 500 --seconds 30
//!
//! Through the public HTTP API (`posthorn serve` and the receiver in processes of their own):
//! posthorn-bench api-latency --rate 200 --seconds 30 [--backlog held|deep --rows 300000]
//! posthorn-bench api-fanout --endpoints 100 --rate 72 --seconds 60
//! posthorn-bench api-ingest --concurrency 32 --seconds 20 [--batch 100]
//!
//! Needs DATABASE_URL (a server where it may create a scratch database).

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
use clap::{Parser, Subcommand};
use server::{dispatcher::Dispatcher, metrics::Metrics};
use tokio::sync::watch;

mod api;

#[derive(Parser)]
struct Args {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Through the API: intended-send → receipt latency at a fixed pace, one endpoint.
    ApiLatency {
        #[arg(long, default_value_t = 200)]
        rate: u64,
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        /// Another project's backlog beside the measured one.
        #[arg(long, value_enum, default_value = "none")]
        backlog: api::Backlog,
        #[arg(long, default_value_t = 300_000)]
        rows: i64,
        /// Give event i the ordering key `key-{i % keys}` (0: no keys).
        #[arg(long, default_value_t = 0)]
        keys: u64,
        /// Settings for `posthorn serve`, KEY=VALUE (repeatable).
        #[arg(long = "env", value_parser = parse_env)]
        env: Vec<(String, String)>,
    },
    /// Through the API: deliveries per second with many endpoints per event.
    ApiFanout {
        #[arg(long, default_value_t = 100)]
        endpoints: usize,
        /// Events offered per second.
        #[arg(long, default_value_t = 72)]
        rate: u64,
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        #[arg(long = "env", value_parser = parse_env)]
        env: Vec<(String, String)>,
    },
    /// Through the API: events accepted per second, clients sending back to back.
    ApiIngest {
        #[arg(long, default_value_t = 32)]
        concurrency: usize,
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        /// Events per request: above 1, `POST /public/v1/events/batch`.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
        batch: u64,
        #[arg(long = "env", value_parser = parse_env)]
        env: Vec<(String, String)>,
    },
    /// The API benchmarks' receiver (started by them as a process of its own).
    #[command(hide = true)]
    Receiver,
    /// Deliveries per second, sustained, with many endpoints per event.
    Throughput {
        #[arg(long, default_value_t = 100)]
        endpoints: usize,
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Dashboard queries on a large generated history (median of repeated runs).
    Queries {
        #[arg(long, default_value_t = 10_000_000)]
        rows: i64,
        #[arg(long, default_value_t = 1000)]
        projects: i64,
        /// Reuse the database of an earlier run instead of generating again.
        #[arg(long)]
        reuse: Option<String>,
    },
    /// Inspector captures per second into one bin, over HTTP on loopback.
    Capture {
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
    },
    /// Ingest-to-receipt latency at a steady event rate, one endpoint.
    Latency {
        #[arg(long, default_value_t = 500)]
        rate: u64,
        #[arg(long, default_value_t = 30)]
        seconds: u64,
    },
}

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

async fn scratch_db() -> (sqlx::PgPool, String) {
    let admin_url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let admin = sqlx::PgPool::connect(&admin_url).await.unwrap();
    let name = format!("ph_bench_{}", std::process::id());
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&admin)
        .await
        .unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&admin)
        .await
        .unwrap();
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&format!("/{name}"));
    let pool = db::connect(url.as_str(), 64).await.unwrap();
    db::migrate(&pool).await.unwrap();
    (pool, url.to_string())
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{s}` is not KEY=VALUE"))
}

fn main() {
    let args = Args::parse();
    if let Mode::Receiver = args.mode {
        return api::receiver();
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(args));
}

async fn run(args: Args) {
    match args.mode {
        Mode::ApiLatency {
            rate,
            seconds,
            backlog,
            rows,
            keys,
            env,
        } => return api::latency(rate, seconds, backlog, (rows, keys), env).await,
        Mode::ApiFanout {
            endpoints,
            rate,
            seconds,
            env,
        } => return api::fanout(endpoints, rate, seconds, env).await,
        Mode::ApiIngest {
            concurrency,
            seconds,
            batch,
            env,
        } => return api::ingest(concurrency, seconds, batch, env).await,
        _ => {}
    }
    if let Mode::Queries {
        rows,
        projects,
        reuse,
    } = args.mode
    {
        return queries(rows, projects, reuse).await;
    }
    if let Mode::Capture {
        seconds,
        concurrency,
    } = args.mode
    {
        return capture(seconds, concurrency).await;
    }
    let (pool, url) = scratch_db().await;
    let track = matches!(args.mode, Mode::Latency { .. });
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
    let endpoints = match args.mode {
        Mode::Throughput { endpoints, .. } => endpoints,
        Mode::Latency { .. } => 1,
        _ => unreachable!("handled above"),
    };
    for _ in 0..endpoints {
        db::endpoints::create(
            &pool,
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

    match args.mode {
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

/// Generates `rows` attempts over 14 days across `projects` projects (project 1, the
/// busiest, gets a tenth of them), then times the dashboard's list and search queries.
async fn queries(rows: i64, projects: i64, reuse: Option<String>) {
    let (pool, url) = match reuse {
        Some(url) => (db::connect(&url, 8).await.unwrap(), url),
        None => {
            let (pool, url) = scratch_db().await;
            let t = Instant::now();
            sqlx::query("INSERT INTO projects (name, plan) SELECT 'p' || g, 'business' FROM generate_series(1, $1) g")
                .bind(projects).execute(&pool).await.unwrap();
            let chunk = 1_000_000i64;
            let mut from = 1;
            while from <= rows {
                let to = (from + chunk - 1).min(rows);
                // Finished rows into the log, waiting ones (s = 19) into the queue.
                for (table, waiting) in [("delivery_log", false), ("delivery_queue", true)] {
                    sqlx::query(&format!(
                    "INSERT INTO {table} (created_at, project_id, event_id, event_type, endpoint_id, target_url, attempt,
                        trigger, status, scheduled_at, started_at, finished_at, duration_ms, request_id, response_status,
                        error_kind, error)
                     SELECT ts, p, 'evt_' || lpad(to_hex(g / 2), 24, '0'),
                        (ARRAY['payment.succeeded','payment.confirmed','message.created','chat.opened','contact.created','subscription.cancelled'])[1 + h % 6],
                        p * 10 + g % 3, 'https://example.com/hook', 1 + g % 2, 'auto',
                        CASE WHEN s < 16 THEN 'succeeded' WHEN s < 18 THEN 'failed' WHEN s < 19 THEN 'dead_letter' ELSE 'pending' END,
                        ts, ts, ts + interval '120 ms', 120, 'req_' || lpad(to_hex(g), 26, '0'),
                        CASE WHEN s < 16 THEN 200 WHEN s < 18 THEN 503 WHEN s < 19 THEN 404 END,
                        CASE WHEN s BETWEEN 16 AND 18 THEN 'http_status' END,
                        CASE WHEN s BETWEEN 16 AND 18 THEN 'endpoint answered an error' END
                     FROM generate_series($1::bigint, $2::bigint) g,
                          LATERAL (SELECT now() - interval '14 days' * (1 - g::float8 / $3) + interval '1 second' AS ts,
                                          CASE WHEN g % 10 = 0 THEN 1 ELSE 2 + (g * 7919) % ($4 - 1) END AS p,
                                          (hashint8(g) & 1023) % 20 AS s, (hashint8(g + 1) & 1023) % 6 AS h) x
                     WHERE (s = 19) = {waiting}",
                ))
                .bind(from).bind(to).bind(rows as f64).bind(projects)
                .execute(&pool).await.unwrap();
                }
                eprintln!("generated {to} rows ({:.0} s)", t.elapsed().as_secs_f64());
                from = to + 1;
            }
            sqlx::query("VACUUM ANALYZE delivery_log, delivery_queue")
                .execute(&pool)
                .await
                .unwrap();
            println!(
                "generated {rows} rows across {projects} projects in {:.0} s; database {url}",
                t.elapsed().as_secs_f64()
            );
            (pool, url)
        }
    };
    let access = app::auth::system_access(1, "bench");
    let (event_id, request_id): (String, String) =
        sqlx::query_as("SELECT event_id, request_id FROM deliveries WHERE project_id = 1 ORDER BY created_at DESC OFFSET 5000 LIMIT 1")
            .fetch_one(&pool).await.unwrap();
    let endpoint: i64 = 11;
    let f = app::deliveries::DeliveryFilter::default;
    let cases: Vec<(&str, app::deliveries::DeliveryFilter)> = vec![
        ("unfiltered", f()),
        (
            "status=dead_letter",
            app::deliveries::DeliveryFilter {
                status: Some(app::core::status::DeliveryStatus::DeadLetter),
                ..f()
            },
        ),
        (
            "endpoint",
            app::deliveries::DeliveryFilter {
                endpoint: Some(endpoint),
                ..f()
            },
        ),
        (
            "event_type",
            app::deliveries::DeliveryFilter {
                event_type: Some("chat.opened".into()),
                ..f()
            },
        ),
        (
            "search event id",
            app::deliveries::DeliveryFilter {
                q: Some(event_id.clone()),
                ..f()
            },
        ),
        (
            "search request id",
            app::deliveries::DeliveryFilter {
                q: Some(request_id.clone()),
                ..f()
            },
        ),
        (
            "code=5xx",
            app::deliveries::DeliveryFilter {
                code: Some("5xx".into()),
                ..f()
            },
        ),
        (
            "error_kind=http_status",
            app::deliveries::DeliveryFilter {
                error_kind: Some(app::core::status::ErrorKind::HttpStatus),
                ..f()
            },
        ),
        (
            "last hour",
            app::deliveries::DeliveryFilter {
                since: Some(chrono::Utc::now() - chrono::Duration::hours(1)),
                ..f()
            },
        ),
    ];
    println!("| query (busiest project, 51 rows) | median ms | p90 ms | rows |");
    println!("|---|---|---|---|");
    for (name, filter) in cases {
        let mut times = Vec::new();
        let mut n = 0;
        for _ in 0..15 {
            let t = Instant::now();
            n = db::deliveries::list(&pool, &access, &filter, 14, 51)
                .await
                .unwrap()
                .len();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("| {name} | {:.2} | {:.2} | {n} |", times[7], times[13]);
    }
    ttfb(&pool, &url).await;
    for (label, sql) in [
        ("unfiltered", format!("SELECT {} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id WHERE d.project_id = 1 AND d.created_at >= now() - make_interval(days => 14) ORDER BY d.created_at DESC, d.id DESC LIMIT 51", db::deliveries::ROW_COLUMNS)),
        ("status", format!("SELECT {} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id WHERE d.project_id = 1 AND d.created_at >= now() - make_interval(days => 14) AND d.status = 'dead_letter' ORDER BY d.created_at DESC, d.id DESC LIMIT 51", db::deliveries::ROW_COLUMNS)),
        ("request id", format!("SELECT {} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id WHERE d.project_id = 1 AND d.created_at >= now() - make_interval(days => 14) AND d.request_id = '{request_id}' ORDER BY d.created_at DESC, d.id DESC LIMIT 51", db::deliveries::ROW_COLUMNS)),
    ] {
        let plan: Vec<String> = sqlx::query_scalar(&format!("EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, SUMMARY ON) {sql}")).fetch_all(&pool).await.unwrap();
        println!("\nEXPLAIN ANALYZE, {label}:\n{}", plan.iter().filter(|l| !l.contains("Subplans Removed") ).take(14).cloned().collect::<Vec<_>>().join("\n"));
    }
}

/// Serves the whole app on a random port; returns its address.
async fn serve_app(pool: &sqlx::PgPool, url: &str) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut cfg = Config::from_env_with(|k| match k {
        "DATABASE_URL" => Some(url.to_string()),
        other => std::env::var(other).ok(),
    })
    .unwrap();
    cfg.site_addr = addr;
    let cfg = Arc::new(cfg);
    server::web::session_store(pool).migrate().await.unwrap();
    let state = server::web::AppState {
        leptos_options: server::web::leptos_options(&cfg),
        pool: pool.clone(),
        cfg,
        metrics: Arc::new(Metrics::default()),
        handoff: None,
        group: None,
        targets: Default::default(),
    };
    tokio::spawn(server::web::serve(state, listener, std::future::pending()));
    addr
}

async fn capture(seconds: u64, concurrency: usize) {
    let (pool, url) = scratch_db().await;
    std::env::set_var("POSTHORN_CAPTURE_RATE_LIMIT", "100000000");
    let addr = serve_app(&pool, &url).await;
    let http = reqwest::Client::new();
    let bin: serde_json::Value = http
        .post(format!("http://{addr}/inspector/bins"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let target = format!("http://{addr}/r/{}/hook", bin["id"].as_str().unwrap());
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let body = r#"{"event_id":"evt_01JD0000000000000000000000","event":"payment.succeeded","data":{"amount":4200}}"#;
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (http, target, count) = (http.clone(), target.clone(), count.clone());
        tasks.push(tokio::spawn(async move {
            while start.elapsed() < Duration::from_secs(seconds) {
                let r = http
                    .post(&target)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let n = count.load(Ordering::Relaxed);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM bin_requests")
        .fetch_one(&pool)
        .await
        .unwrap();
    println!("{concurrency} concurrent clients, {seconds} s: {n} captures = {:.0} requests/s into one bin ({stored} kept: the newest 500)", n as f64 / start.elapsed().as_secs_f64());
}

/// Time to first byte of `/developers/deliveries` for a signed-in owner of project 1.
async fn ttfb(pool: &sqlx::PgPool, url: &str) {
    let addr = serve_app(pool, url).await;
    let user = db::users::upsert(pool, "ttfb@example.com", "bench-password", "user")
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO memberships (project_id, user_id) VALUES (1, $1) ON CONFLICT DO NOTHING",
    )
    .bind(user.id)
    .execute(pool)
    .await
    .unwrap();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = http
        .post(format!("http://{addr}/api/login"))
        .form(&[
            ("email", "ttfb@example.com"),
            ("password", "bench-password"),
        ])
        .send()
        .await
        .unwrap();
    let cookie = res
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("posthorn_session="))
        .map(|v| v.split(';').next().unwrap().to_string())
        .expect("session cookie");
    let mut first = Vec::new();
    let mut full = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        let res = http
            .get(format!("http://{addr}/developers/deliveries"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        first.push(t.elapsed().as_secs_f64() * 1000.0);
        let body = res.text().await.unwrap();
        assert!(body.contains("delivery-row"), "the page lists deliveries");
        full.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    first.sort_by(|a, b| a.partial_cmp(b).unwrap());
    full.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("\n/developers/deliveries (50 rows, server-rendered whole): time to first byte median {:.1} ms (p90 {:.1}), full page median {:.1} ms", first[7], first[13], full[7]);
}
