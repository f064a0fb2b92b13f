//! Prometheus text metrics: attempts by outcome, attempt latency, queue depth.

use std::sync::atomic::{AtomicU64, Ordering};

use app::core::status::DeliveryStatus;

use app::db::queue::Outcome;

const BUCKETS_MS: [u64; 12] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];

#[derive(Default)]
pub struct Metrics {
    succeeded: AtomicU64,
    failed: AtomicU64,
    dead_letter: AtomicU64,
    buckets: [AtomicU64; 12],
    count: AtomicU64,
    sum_ms: AtomicU64,
    slots_missed: AtomicU64,
    /// Rows removed from projects' history older than their own window: attempts, events.
    trimmed: [AtomicU64; 2],
}

impl Metrics {
    pub fn observe(&self, o: &Outcome) {
        match o.status {
            DeliveryStatus::Succeeded => &self.succeeded,
            DeliveryStatus::Failed => &self.failed,
            _ => &self.dead_letter,
        }
        .fetch_add(1, Ordering::Relaxed);
        let ms = o.duration_ms.max(0) as u64;
        for (i, le) in BUCKETS_MS.iter().enumerate() {
            if ms <= *le {
                self.buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ms.fetch_add(ms, Ordering::Relaxed);
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

    pub fn render(&self, queue_depth: i64, oldest_due_secs: f64) -> String {
        let mut out = String::new();
        out.push_str("# HELP posthorn_attempts_total Delivery attempts by outcome.\n# TYPE posthorn_attempts_total counter\n");
        for (name, c) in [
            ("succeeded", &self.succeeded),
            ("failed", &self.failed),
            ("dead_letter", &self.dead_letter),
        ] {
            out.push_str(&format!(
                "posthorn_attempts_total{{outcome=\"{name}\"}} {}\n",
                c.load(Ordering::Relaxed)
            ));
        }
        out.push_str("# HELP posthorn_attempt_duration_seconds Time from sending an attempt to its outcome.\n# TYPE posthorn_attempt_duration_seconds histogram\n");
        for (i, le) in BUCKETS_MS.iter().enumerate() {
            out.push_str(&format!(
                "posthorn_attempt_duration_seconds_bucket{{le=\"{}\"}} {}\n",
                *le as f64 / 1000.0,
                self.buckets[i].load(Ordering::Relaxed)
            ));
        }
        let count = self.count.load(Ordering::Relaxed);
        out.push_str(&format!(
            "posthorn_attempt_duration_seconds_bucket{{le=\"+Inf\"}} {count}\n"
        ));
        out.push_str(&format!(
            "posthorn_attempt_duration_seconds_sum {}\n",
            self.sum_ms.load(Ordering::Relaxed) as f64 / 1000.0
        ));
        out.push_str(&format!(
            "posthorn_attempt_duration_seconds_count {count}\n"
        ));
        out.push_str("# HELP posthorn_start_slots_missed_total Throttled attempts that missed their start slot and went back to the queue.\n# TYPE posthorn_start_slots_missed_total counter\n");
        out.push_str(&format!(
            "posthorn_start_slots_missed_total {}\n",
            self.slots_missed.load(Ordering::Relaxed)
        ));
        out.push_str("# HELP posthorn_queue_depth Pending attempts that are due.\n# TYPE posthorn_queue_depth gauge\n");
        out.push_str(&format!("posthorn_queue_depth {queue_depth}\n"));
        out.push_str("# HELP posthorn_oldest_due_pending_seconds Age of the oldest due pending attempt.\n# TYPE posthorn_oldest_due_pending_seconds gauge\n");
        out.push_str(&format!(
            "posthorn_oldest_due_pending_seconds {oldest_due_secs}\n"
        ));
        out.push_str("# HELP posthorn_retention_trimmed_rows_total Rows removed because they passed their project's own retention_days.\n# TYPE posthorn_retention_trimmed_rows_total counter\n");
        for (table, c) in ["attempts", "events"].iter().zip(&self.trimmed) {
            out.push_str(&format!(
                "posthorn_retention_trimmed_rows_total{{table=\"{table}\"}} {}\n",
                c.load(Ordering::Relaxed)
            ));
        }
        out
    }
}
