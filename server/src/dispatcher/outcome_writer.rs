//! The outcome writer: what an attempt's task reports (an outcome, or its row handed
//! back), and the task that writes those reports to the queue in batches.

use app::core::AttemptId;
use std::{sync::Arc, time::Duration};

use sqlx::PgPool;
use tokio::sync::{mpsc, Notify};

use super::{queue, queue::Outcome, slow, Held};

/// What an attempt's task reports to the writer: an outcome to record, or a row it did
/// not finish (stopped or aborted) to hand back to the queue.
pub(super) enum Report {
    Outcome(Box<Outcome>),
    HandBack {
        id: AttemptId,
        created_at: chrono::DateTime<chrono::Utc>,
    },
}

/// Sends `HandBack` for its row unless the task reported an outcome first, so a task
/// that ends any other way (early return, abort, panic) never leaves its row held.
pub(super) struct HandBackOnDrop {
    id: AttemptId,
    held: Held,
    created_at: chrono::DateTime<chrono::Utc>,
    reports: mpsc::UnboundedSender<Report>,
    done: bool,
}

impl HandBackOnDrop {
    pub(super) fn new(
        id: AttemptId,
        created_at: chrono::DateTime<chrono::Utc>,
        held: Held,
        reports: mpsc::UnboundedSender<Report>,
    ) -> HandBackOnDrop {
        HandBackOnDrop {
            id,
            held,
            created_at,
            reports,
            done: false,
        }
    }

    /// Reports the outcome; the row's request has ended, so its endpoint's share is free.
    pub(super) fn report(mut self, outcome: Outcome) {
        if let Some(row) = (self.held.lock().unwrap_or_else(|e| e.into_inner())).get_mut(&self.id) {
            row.finished = true;
        }
        self.done = self
            .reports
            .send(Report::Outcome(Box::new(outcome)))
            .is_ok();
    }
}

impl Drop for HandBackOnDrop {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.reports.send(Report::HandBack {
                id: self.id,
                created_at: self.created_at,
            });
        }
    }
}

/// Records outcomes in batches and hands back rows whose task ended without one. A batch
/// that cannot be written (database down) is kept and retried: an outcome is never
/// dropped while this process lives.
pub(super) async fn write_outcomes(
    pool: PgPool,
    worker: String,
    mut rx: mpsc::UnboundedReceiver<Report>,
    held: Held,
    progress: Arc<Notify>,
    recorded_batches: Arc<std::sync::atomic::AtomicU64>,
    metrics: Arc<crate::metrics::Metrics>,
) {
    let mut batch: Vec<Outcome> = Vec::new();
    let mut returned: Vec<(AttemptId, chrono::DateTime<chrono::Utc>)> = Vec::new();
    let mut closed = false;
    let kept = app::db::kept::Kept::new(pool, 1);
    loop {
        if batch.is_empty() && returned.is_empty() {
            if closed {
                return;
            }
            match rx.recv().await {
                Some(Report::Outcome(o)) => batch.push(*o),
                Some(Report::HandBack { id, created_at }) => returned.push((id, created_at)),
                None => return,
            }
        }
        while batch.len() < 500 {
            match rx.try_recv() {
                Ok(Report::Outcome(o)) => batch.push(*o),
                Ok(Report::HandBack { id, created_at }) => returned.push((id, created_at)),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        let started = std::time::Instant::now();
        // Both statements on the one connection this writer's pool has: the hand-back
        // once asked that pool for a second one while the first was kept here, and
        // waited for ever, leaving every later outcome unrecorded and its row held.
        let written = match kept.get().await {
            Ok(mut conn) => {
                let mut written = queue::record(&mut conn, &worker, &batch).await;
                if written.is_ok() && !returned.is_empty() {
                    written = queue::release(&mut *conn, &worker, &returned).await;
                }
                conn.keep_if_ok(written)
            }
            Err(e) => Err(e),
        };
        slow("recording outcomes", started);
        metrics.outcomes_written(started.elapsed());
        match written {
            Ok(_) => {
                let mut h = held.lock().unwrap_or_else(|e| e.into_inner());
                for id in batch
                    .iter()
                    .map(|o| o.id)
                    .chain(returned.iter().map(|r| r.0))
                {
                    h.remove(&id);
                }
                drop(h);
                batch.clear();
                returned.clear();
                recorded_batches.fetch_add(1, std::sync::atomic::Ordering::Release);
                progress.notify_one();
            }
            Err(e) => {
                tracing::warn!(error = %e, pending = batch.len(), "recording outcomes failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}
