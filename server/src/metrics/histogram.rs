//! A latency histogram of atomics, in Prometheus' cumulative form.

use std::{
    fmt::Write,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

/// Upper bounds in milliseconds: from a claim's few ms to a read timeout's 30 s.
pub const BUCKETS_MS: [u64; 14] = [
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,
];

#[derive(Default)]
pub struct Histogram {
    buckets: [AtomicU64; 14],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        let ms = us / 1000;
        if let Some(i) = BUCKETS_MS
            .iter()
            .position(|le| ms < *le || (ms == *le && us.is_multiple_of(1000)))
        {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn sum_seconds(&self) -> f64 {
        self.sum_us.load(Ordering::Relaxed) as f64 / 1e6
    }

    /// The `_bucket`, `_sum` and `_count` lines of `name`, each with `labels` (already
    /// `k="v"` text, or empty).
    pub fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut running = 0;
        for (i, le) in BUCKETS_MS.iter().enumerate() {
            running += self.buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{}\"}} {running}",
                *le as f64 / 1000.0
            );
        }
        let count = self.count();
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let braces = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!("{{{s}}}")
            }
        };
        let _ = writeln!(out, "{name}_sum{} {}", braces(labels), self.sum_seconds());
        let _ = writeln!(out, "{name}_count{} {count}", braces(labels));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_bounds_inclusive() {
        let h = Histogram::default();
        h.observe(Duration::from_millis(1));
        h.observe(Duration::from_micros(1500));
        h.observe(Duration::from_secs(60));
        let mut out = String::new();
        h.render(&mut out, "x_seconds", "route=\"/a\"");
        assert!(
            out.contains("x_seconds_bucket{route=\"/a\",le=\"0.001\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{route=\"/a\",le=\"0.002\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{route=\"/a\",le=\"30\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{route=\"/a\",le=\"+Inf\"} 3\n"),
            "{out}"
        );
        assert!(out.contains("x_seconds_count{route=\"/a\"} 3\n"), "{out}");
        let mut bare = String::new();
        h.render(&mut bare, "y_seconds", "");
        assert!(
            bare.contains("y_seconds_bucket{le=\"0.001\"} 1\n"),
            "{bare}"
        );
        assert!(bare.contains("y_seconds_sum 60.0025\n"), "{bare}");
        assert!(bare.contains("y_seconds_count 3\n"), "{bare}");
    }
}
