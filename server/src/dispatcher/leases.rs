//! Leases: the held rows' leases kept alive while they wait or run, and rows whose
//! worker vanished put back in the queue.

use app::core::AttemptId;
use std::{sync::Arc, time::Duration};

use sqlx::PgPool;
use tokio::sync::Notify;

use super::{queue, slow, Held};

/// Keeps the leases of held rows alive while they wait or run.
pub(super) async fn renew(pool: PgPool, worker: String, held: Held, lease: Duration) {
    let every = (lease / 3).max(Duration::from_millis(200));
    loop {
        tokio::time::sleep(every).await;
        let ids: Vec<AttemptId> = held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .copied()
            .collect();
        if ids.is_empty() {
            continue;
        }
        if let Err(e) = queue::renew_leases(&pool, &worker, &ids, lease).await {
            tracing::warn!(error = %e, "lease renewal failed");
        }
    }
}

/// Puts rows whose worker vanished back in the queue, `every` apart, and wakes the loop
/// to claim them. Beside the loop, not in it: the scan reads the whole queue (110–265 ms
/// beside a fan-out's backlog of 200,000 rows), and the loop waiting for it held up every
/// attempt handed over from ingest meanwhile, every tenant's.
pub(super) async fn recover(pool: PgPool, every: Duration, wake: Arc<Notify>) {
    loop {
        let started = std::time::Instant::now();
        let recovered = queue::recover_expired(&pool).await;
        slow("lease recovery", started);
        match recovered {
            Ok(n) if n > 0 => {
                tracing::warn!(rows = n, "recovered attempts whose lease ran out");
                wake.notify_one();
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "lease recovery failed"),
        }
        tokio::time::sleep(every).await;
    }
}
