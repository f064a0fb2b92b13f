//! What a run costs: CPU from /proc (the machine's, and by process), commits and WAL
//! flushes, and the statements that took the database's time.

use std::{collections::HashMap, time::Instant};

use sqlx::PgPool;

const TICKS_PER_SECOND: f64 = 100.0;

fn machine_busy_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    cpu.iter().take(8).sum::<u64>() - cpu.get(3).unwrap_or(&0) - cpu.get(4).unwrap_or(&0)
}

/// utime + stime of every process, grouped: this benchmark, posthorn, the receiver,
/// PostgreSQL (all its backends), other.
fn process_ticks(server: u32, receiver: u32) -> HashMap<&'static str, u64> {
    let me = std::process::id();
    let mut out: HashMap<&'static str, u64> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = &stat[stat.find('(').unwrap_or(0) + 1..close];
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
            + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
        let group = match pid {
            p if p == me => "load generator",
            p if p == server => "posthorn serve",
            p if p == receiver => "receiver",
            _ if comm.starts_with("postgres") || comm.starts_with("postmaster") => "postgresql",
            _ => "other",
        };
        *out.entry(group).or_default() += ticks;
    }
    out
}

pub struct CpuSample {
    at: Instant,
    machine: u64,
    by: HashMap<&'static str, u64>,
}

impl CpuSample {
    pub fn take(server: u32, receiver: u32) -> CpuSample {
        CpuSample {
            at: Instant::now(),
            machine: machine_busy_ticks(),
            by: process_ticks(server, receiver),
        }
    }

    /// Machine CPU ms per unit of work between two samples, and the split by process.
    pub fn report(&self, later: &CpuSample, units: u64, unit: &str) {
        let units = units.max(1) as f64;
        let ms = |ticks: u64| ticks as f64 * 1000.0 / TICKS_PER_SECOND;
        let machine = ms(later.machine.saturating_sub(self.machine));
        let secs = (later.at - self.at).as_secs_f64();
        println!(
            "machine CPU: {:.3} ms per {unit} ({:.0} % of the 2 cores over {secs:.1} s)",
            machine / units,
            machine / secs / 10.0 / 2.0
        );
        let mut groups: Vec<_> = later.by.keys().copied().collect();
        groups.sort();
        for g in groups {
            let d = later.by[g].saturating_sub(*self.by.get(g).unwrap_or(&0));
            println!("  {g:>15}: {:.3} ms per {unit}", ms(d) / units);
        }
    }
}

/// Commits in the scratch database and WAL flushes of the whole cluster, for "per
/// event" figures (the statistics lag by up to half a second; runs are long).
pub async fn pg_counters(pool: &PgPool) -> (i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
                (SELECT wal_sync FROM pg_stat_wal)",
    )
    .fetch_one(pool)
    .await
    .unwrap_or((0, 0))
}

/// What the database wrote: WAL bytes of the whole cluster, rows inserted, updated and
/// deleted in the scratch database's tables (statistics lag by up to half a second), and
/// the scratch database's size. For the per-delivery and per-event figures of
/// docs/SCALING.md.
pub struct Writes {
    wal_bytes: i64,
    rows: i64,
    size: i64,
}

impl Writes {
    pub async fn take(pool: &PgPool) -> Writes {
        // Statistics are sent at the end of a transaction and read from a snapshot: wait
        // for the collector, then read afresh.
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        let _ = sqlx::query("SELECT pg_stat_clear_snapshot()")
            .execute(pool)
            .await;
        let (wal_bytes, rows, size) = sqlx::query_as(
            "SELECT (SELECT wal_bytes::bigint FROM pg_stat_wal),
                    (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint
                     FROM pg_stat_user_tables),
                    pg_database_size(current_database())",
        )
        .fetch_one(pool)
        .await
        .unwrap_or((0, 0, 0));
        Writes {
            wal_bytes,
            rows,
            size,
        }
    }

    pub fn report(&self, later: &Writes, units: u64, unit: &str) {
        let units = units.max(1) as f64;
        println!(
            "PostgreSQL wrote {:.0} WAL bytes and {:.2} rows (inserted, updated, deleted) per {unit}; the database grew {:.0} bytes per {unit}",
            (later.wal_bytes - self.wal_bytes) as f64 / units,
            (later.rows - self.rows) as f64 / units,
            (later.size - self.size) as f64 / units,
        );
    }

    /// What a kept row costs on disk, indexes included: an attempt in the log (every
    /// day's partition) and an event. For storage per day at a rate and retention.
    pub async fn stored(pool: &PgPool) {
        let (log_bytes, log_rows, event_bytes, event_rows): (i64, i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::bigint
                     FROM pg_partition_tree('delivery_log')),
                    (SELECT count(*) FROM delivery_log),
                    pg_total_relation_size('events'),
                    (SELECT count(*) FROM events)",
        )
        .fetch_one(pool)
        .await
        .unwrap_or((0, 0, 0, 0));
        println!(
            "stored, indexes included: {:.0} bytes per attempt in the log ({log_rows} rows), {:.0} bytes per event ({event_rows} rows)",
            log_bytes as f64 / log_rows.max(1) as f64,
            event_bytes as f64 / event_rows.max(1) as f64
        );
    }
}

/// Starts counting statements in the scratch database afresh when the cluster preloads
/// `pg_stat_statements`; false (and nothing is printed later) when it does not.
pub async fn statements_reset(pool: &PgPool) -> bool {
    sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(pool)
        .await
        .is_ok()
        && sqlx::query("SELECT pg_stat_statements_reset()")
            .execute(pool)
            .await
            .is_ok()
}

/// The statements that cost the database most, per unit of work: calls, and ms spent
/// executing and planning (planning is counted when `pg_stat_statements.track_planning`
/// is on). The benchmark's own polling shows up here too, and is labelled by its text.
pub async fn statements_report(pool: &PgPool, counting: bool, units: u64, unit: &str) {
    if !counting {
        return;
    }
    let rows: Vec<(i64, f64, f64, String)> = sqlx::query_as(
        "SELECT calls, total_exec_time, total_plan_time,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
         FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         ORDER BY total_exec_time + total_plan_time DESC LIMIT 12",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    let units = units.max(1) as f64;
    println!("statements by database time, per {unit}: calls | ms executing | ms planning | text");
    for (calls, exec, plan, text) in rows {
        println!(
            "  {:>6.3} | {:>6.3} | {:>6.3} | {text}",
            calls as f64 / units,
            exec / units,
            plan / units
        );
    }
}
