//! Prometheus text metrics. Every series is an atomic this process keeps (or a pool's
//! own count): a scrape reads memory and queries nothing, so it costs the same beside an
//! empty queue and a million waiting attempts. The queue's depth and oldest due age are
//! sampled by the dispatcher on its own clock ([`Metrics::sample_queue`]). Labels are
//! bounded: outcomes, error kinds, route patterns, pool names; never a project or an
//! endpoint.

mod histogram;
pub mod routes;

use std::{
    fmt::Write,
    sync::{
        atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering},
        Mutex,
    },
    time::Duration,
};

use app::core::status::{DeliveryStatus, ErrorKind};
use app::db::queue::Outcome;
use sqlx::PgPool;

pub use histogram::Histogram;

/// New connections the dispatchers' clients opened to receivers (each to an https one is
/// a TLS handshake): counted by the clients' connector, one count for the process.
pub static CONNECTIONS_OPENED: AtomicU64 = AtomicU64::new(0);

#[derive(Default)]
pub struct Metrics {
    succeeded: AtomicU64,
    failed: AtomicU64,
    dead_letter: AtomicU64,
    /// Attempts that failed, by [`ErrorKind::ALL`]'s order.
    errors: [AtomicU64; ErrorKind::ALL.len()],
    attempt: Histogram,
    claim: Histogram,
    claimed_rows: AtomicU64,
    outcome_write: Histogram,
    slots_missed: AtomicU64,
    /// Rows removed from projects' history older than their own window: attempts, events.
    trimmed: [AtomicU64; 2],
    pub routes: routes::Routes,
    /// This process runs a dispatcher (and so samples the queue).
    dispatching: AtomicBool,
    queue_due: AtomicI64,
    oldest_due_ms: AtomicU64,
    queue_sampled_at: AtomicI64,
    /// The last queue sample reached the database.
    database_up: AtomicBool,
    pools: Mutex<Vec<(&'static str, PgPool)>>,
}

impl Metrics {
    pub fn observe(&self, o: &Outcome) {
        match o.status {
            DeliveryStatus::Succeeded => &self.succeeded,
            DeliveryStatus::Failed => &self.failed,
            _ => &self.dead_letter,
        }
        .fetch_add(1, Ordering::Relaxed);
        if let Some(kind) = o.error_kind {
            let i = ErrorKind::ALL.iter().position(|k| *k == kind);
            if let Some(counter) = i.and_then(|i| self.errors.get(i)) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
        let ms = o.duration_ms.max(0) as u64;
        self.attempt.observe(Duration::from_millis(ms));
    }

    /// One claim statement ran, taking `rows`.
    pub fn claimed(&self, took: Duration, rows: usize) {
        self.claim.observe(took);
        self.claimed_rows.fetch_add(rows as u64, Ordering::Relaxed);
    }

    /// One write of a batch of outcomes.
    pub fn outcomes_written(&self, took: Duration) {
        self.outcome_write.observe(took);
    }

    /// A throttled attempt started too late for its slot and went back to the queue.
    pub fn start_slot_missed(&self) {
        self.slots_missed.fetch_add(1, Ordering::Relaxed);
    }

    /// One step of trimming projects' history to their windows removed these rows.
    pub fn trimmed(&self, attempts: u64, events: u64) {
        self.trimmed[0].fetch_add(attempts, Ordering::Relaxed);
        self.trimmed[1].fetch_add(events, Ordering::Relaxed);
    }

    /// A pool whose size and idle connections are reported as `name`.
    pub fn watch_pool(&self, name: &'static str, pool: &PgPool) {
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        pools.retain(|(n, _)| *n != name);
        pools.push((name, pool.clone()));
    }

    /// The queue as the dispatcher last counted it: due attempts, and the age of the
    /// oldest.
    pub fn sample_queue(&self, due: i64, oldest_due: Duration) {
        self.dispatching.store(true, Ordering::Relaxed);
        self.database_up.store(true, Ordering::Relaxed);
        self.queue_due.store(due, Ordering::Relaxed);
        self.oldest_due_ms
            .store(oldest_due.as_millis() as u64, Ordering::Relaxed);
        self.queue_sampled_at
            .store(chrono::Utc::now().timestamp(), Ordering::Relaxed);
    }

    /// The queue could not be counted: the database did not answer.
    pub fn sample_failed(&self) {
        self.dispatching.store(true, Ordering::Relaxed);
        self.database_up.store(false, Ordering::Relaxed);
    }

    pub fn render(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        self.render_attempts(&mut out);
        self.render_dispatcher(&mut out);
        self.routes.render(&mut out);
        self.render_pools(&mut out);
        help(
            &mut out,
            "posthorn_retention_trimmed_rows_total",
            "counter",
            "Rows removed because they passed their project's own retention_days.",
        );
        for (table, c) in ["attempts", "events"].iter().zip(&self.trimmed) {
            let _ = writeln!(
                out,
                "posthorn_retention_trimmed_rows_total{{table=\"{table}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        out
    }

    fn render_attempts(&self, out: &mut String) {
        help(
            out,
            "posthorn_attempts_total",
            "counter",
            "Delivery attempts by outcome.",
        );
        for (name, c) in [
            ("succeeded", &self.succeeded),
            ("failed", &self.failed),
            ("dead_letter", &self.dead_letter),
        ] {
            let n = c.load(Ordering::Relaxed);
            let _ = writeln!(out, "posthorn_attempts_total{{outcome=\"{name}\"}} {n}");
        }
        help(out, "posthorn_attempt_errors_total", "counter", "Attempts that did not succeed, by error kind (http_status: the receiver answered non-2xx).");
        for (kind, c) in ErrorKind::ALL.iter().zip(&self.errors) {
            let n = c.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "posthorn_attempt_errors_total{{error_kind=\"{}\"}} {n}",
                kind.as_str()
            );
        }
        help(
            out,
            "posthorn_attempt_duration_seconds",
            "histogram",
            "Time from sending an attempt to its outcome.",
        );
        self.attempt
            .render(out, "posthorn_attempt_duration_seconds", "");
        help(
            out,
            "posthorn_start_slots_missed_total",
            "counter",
            "Throttled attempts that missed their start slot and went back to the queue.",
        );
        let missed = self.slots_missed.load(Ordering::Relaxed);
        let _ = writeln!(out, "posthorn_start_slots_missed_total {missed}");
        help(
            out,
            "posthorn_connections_opened_total",
            "counter",
            "Connections opened to receivers (each to an https receiver is a TLS handshake).",
        );
        let opened = CONNECTIONS_OPENED.load(Ordering::Relaxed);
        let _ = writeln!(out, "posthorn_connections_opened_total {opened}");
    }

    fn render_dispatcher(&self, out: &mut String) {
        help(
            out,
            "posthorn_claim_duration_seconds",
            "histogram",
            "Time of one claim statement of this process's dispatcher.",
        );
        self.claim
            .render(out, "posthorn_claim_duration_seconds", "");
        help(
            out,
            "posthorn_claimed_attempts_total",
            "counter",
            "Attempts this process's dispatcher claimed from the queue.",
        );
        let rows = self.claimed_rows.load(Ordering::Relaxed);
        let _ = writeln!(out, "posthorn_claimed_attempts_total {rows}");
        help(
            out,
            "posthorn_outcome_write_duration_seconds",
            "histogram",
            "Time of one write of a batch of outcomes.",
        );
        self.outcome_write
            .render(out, "posthorn_outcome_write_duration_seconds", "");
        // Families without samples until this process's dispatcher has counted the queue
        // (a process without one reports none).
        let sampled = self.dispatching.load(Ordering::Relaxed);
        let at = self.queue_sampled_at.load(Ordering::Relaxed);
        let gauges = [
            (
                "posthorn_queue_depth",
                "Pending attempts that are due, as the dispatcher last counted them.",
                self.queue_due.load(Ordering::Relaxed) as f64,
            ),
            (
                "posthorn_oldest_due_pending_seconds",
                "Age of the oldest due pending attempt at the last sample.",
                self.oldest_due_ms.load(Ordering::Relaxed) as f64 / 1000.0,
            ),
            (
                "posthorn_queue_sampled_timestamp_seconds",
                "When the dispatcher last sampled the queue (Unix time).",
                at as f64,
            ),
            (
                "posthorn_database_up",
                "1 when the dispatcher's last queue sample reached PostgreSQL, else 0.",
                f64::from(u8::from(self.database_up.load(Ordering::Relaxed))),
            ),
        ];
        for (name, text, value) in gauges {
            help(out, name, "gauge", text);
            if sampled {
                let _ = writeln!(out, "{name} {value}");
            }
        }
    }

    fn render_pools(&self, out: &mut String) {
        let pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        help(
            out,
            "posthorn_db_connections",
            "gauge",
            "PostgreSQL connections of each pool, by state.",
        );
        for (name, pool) in pools.iter() {
            let (size, idle) = (pool.size(), pool.num_idle() as u32);
            let busy = size.saturating_sub(idle);
            let _ = writeln!(
                out,
                "posthorn_db_connections{{pool=\"{name}\",state=\"busy\"}} {busy}"
            );
            let _ = writeln!(
                out,
                "posthorn_db_connections{{pool=\"{name}\",state=\"idle\"}} {idle}"
            );
        }
        help(
            out,
            "posthorn_db_connections_max",
            "gauge",
            "The most connections each pool opens.",
        );
        for (name, pool) in pools.iter() {
            let max = pool.options().get_max_connections();
            let _ = writeln!(out, "posthorn_db_connections_max{{pool=\"{name}\"}} {max}");
        }
    }
}

fn help(out: &mut String, name: &str, kind: &str, text: &str) {
    let _ = writeln!(out, "# HELP {name} {text}\n# TYPE {name} {kind}");
}
