//! Posthorn's benchmarks (figures and how to read them: BENCHMARKS.md). One module per
//! group of scenarios:
//!
//! In process (`in_process`: ingest through the domain function, receiver in the same process):
//! posthorn-bench throughput --endpoints 100 --seconds 60
//! posthorn-bench latency --rate 500 --seconds 30
//!
//! Through the public HTTP API (`api`: `posthorn serve` and the receiver in processes of
//! their own):
//! posthorn-bench api-latency --rate 200 --seconds 30 [--backlog held|deep|replays|keyed-batches|batches|costly-definitions --rows 300000]
//! posthorn-bench api-fanout --endpoints 100 --rate 72 --seconds 60
//! posthorn-bench api-metrics --rows 1000000 --scrapes 200
//! posthorn-bench api-ingest --concurrency 32 --seconds 20 [--batch 100] [--to redis|nats|mqtt]
//!   [--endpoints 100 --filter 'data.amount > 1000 && data.currency == "EUR"']
//!   [--schema bench/order-paid.schema.json]
//!
//! The dashboard (`dashboard`) and the inspector (`inspector`):
//! posthorn-bench queries --rows 10000000 --projects 1000
//! posthorn-bench capture --seconds 10 --concurrency 16
//!
//! The worst definitions a tenant may set, in process (`worst`):
//! posthorn-bench worst-definitions --runs 5
//!
//! Erasure of one data subject (`erasure`), through the public API:
//! posthorn-bench erasure --rows 10000000 --projects 1000 --runs 5
//!
//! Needs DATABASE_URL (a server where it may create a scratch database).

use std::sync::Arc;

use app::{cfg::Config, db};
use clap::{Parser, Subcommand};
use server::metrics::Metrics;

mod api;
mod dashboard;
mod erasure;
mod filters;
mod in_process;
mod inspector;
mod worst;

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
    /// `/metrics` scrapes beside `rows` due attempts of a slow endpoint.
    ApiMetrics {
        #[arg(long, default_value_t = 1_000_000)]
        rows: i64,
        #[arg(long, default_value_t = 200)]
        scrapes: u64,
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
        /// Endpoints every event goes to (before filters).
        #[arg(long, default_value_t = 1)]
        endpoints: usize,
        /// A CEL filter every endpoint gets (the events carry `data.amount` 4200 and
        /// `data.currency` "EUR").
        #[arg(long)]
        filter: Option<String>,
        /// A file with a JSON Schema to set for the events' type (`order.paid`).
        #[arg(long)]
        schema: Option<std::path::PathBuf>,
        /// Where the endpoints deliver: the receiver over HTTP, or a private Redis stream,
        /// NATS JetStream subject or MQTT topic (their servers started here, on PATH).
        #[arg(long, value_enum, default_value = "http")]
        to: api::To,
        #[arg(long = "env", value_parser = parse_env)]
        env: Vec<(String, String)>,
    },
    /// In process: one event's filter verdicts for many endpoints.
    FilterEval {
        #[arg(long, default_value_t = 100)]
        endpoints: usize,
        #[arg(long, default_value_t = 20_000)]
        events: usize,
        #[arg(long, default_value = "data.amount > 1000 && data.currency == \"EUR\"")]
        filter: String,
    },
    /// In process: the worst schemas and filters a tenant may set, on the largest events.
    WorstDefinitions {
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// One case only (each runs in a process of its own).
        #[arg(long)]
        case: Option<usize>,
        /// A case still running after this long is killed and reported so.
        #[arg(long, default_value_t = 30)]
        limit_seconds: u64,
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
    /// Erasure of one subject on a large generated history, through the public API.
    Erasure {
        #[arg(long, default_value_t = 10_000_000)]
        rows: i64,
        #[arg(long, default_value_t = 1000)]
        projects: i64,
        /// Subjects erased, one after another.
        #[arg(long, default_value_t = 5)]
        runs: usize,
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
        } => api::latency(rate, seconds, backlog, (rows, keys), env).await,
        Mode::ApiMetrics { rows, scrapes, env } => api::scrape(rows, scrapes, env).await,
        Mode::ApiFanout {
            endpoints,
            rate,
            seconds,
            env,
        } => api::fanout(endpoints, rate, seconds, env).await,
        Mode::ApiIngest {
            concurrency,
            seconds,
            batch,
            endpoints,
            filter,
            schema,
            to,
            env,
        } => {
            let schema = schema.map(|p| std::fs::read_to_string(p).expect("the schema file"));
            let to = api::Subscribers {
                endpoints,
                filter,
                schema,
                to,
            };
            api::ingest(concurrency, seconds, batch, to, env).await
        }
        Mode::FilterEval {
            endpoints,
            events,
            filter,
        } => filters::eval(endpoints, events, &filter),
        Mode::WorstDefinitions {
            runs,
            case,
            limit_seconds,
        } => worst::run(runs, case, limit_seconds),
        Mode::Queries {
            rows,
            projects,
            reuse,
        } => dashboard::queries(rows, projects, reuse).await,
        Mode::Capture {
            seconds,
            concurrency,
        } => inspector::capture(seconds, concurrency).await,
        Mode::Erasure {
            rows,
            projects,
            runs,
            reuse,
        } => erasure::erase(rows, projects, runs, reuse).await,
        mode @ (Mode::Throughput { .. } | Mode::Latency { .. }) => in_process::run(mode).await,
        Mode::Receiver => unreachable!("runs without the runtime, from main"),
    }
}
