//! The benchmark through the public HTTP API, as a user gets it: a real `posthorn serve`
//! process, events sent to `POST /public/v1/events` at a fixed pace, and a receiver in a
//! process of its own (`posthorn-bench receiver`), receipts matched to sends by their
//! `webhook-id`.
//!
//! Latency is measured from each event's *intended* send time (the pace's schedule), so a
//! slow answer delays no later measurement (no coordinated omission); the receiver stamps
//! each receipt with the wall clock both processes share.

use std::{
    process::Command,
    time::{SystemTime, UNIX_EPOCH},
};

use sqlx::PgPool;

mod brokers;
mod costly;
mod latency;
mod measure;
mod neighbours;
mod processes;
mod rig;
mod scrape;
mod throughput;

pub use brokers::To;
pub use latency::{latency, Backlog};
pub use processes::receiver;
pub use scrape::scrape;
pub use throughput::{fanout, ingest, Subscribers};

/// The `posthorn` binary measured: beside this one, or `POSTHORN_BIN` (an earlier build,
/// for before/after figures; it migrates its own database).
pub fn posthorn_bin() -> std::path::PathBuf {
    std::env::var_os("POSTHORN_BIN")
        .map(Into::into)
        .unwrap_or_else(|| std::env::current_exe().unwrap().with_file_name("posthorn"))
}

/// An empty scratch database; its URL and a pool on it.
pub async fn empty_db() -> (PgPool, String) {
    let admin_url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let admin = PgPool::connect(&admin_url).await.unwrap();
    let name = format!("ph_bench_api_{}", std::process::id());
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        sqlx::query(&sql).execute(&admin).await.unwrap();
    }
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&format!("/{name}"));
    let pool = app::db::connect(url.as_str(), 8).await.unwrap();
    (pool, url.to_string())
}

/// `posthorn <args>` on the scratch database; its standard output.
pub fn posthorn(db_url: &str, args: &[&str]) -> String {
    let out = Command::new(posthorn_bin())
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run posthorn");
    assert!(out.status.success(), "posthorn {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where waiting attempts live in the build measured: the queue table, or (builds before
/// it) the deliveries table itself.
pub async fn queue_table(pool: &PgPool) -> &'static str {
    let split: Option<String> = sqlx::query_scalar("SELECT to_regclass('delivery_queue')::text")
        .fetch_one(pool)
        .await
        .unwrap_or(None);
    match split {
        Some(_) => "delivery_queue",
        None => "deliveries",
    }
}

pub fn unix_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}
