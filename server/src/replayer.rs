//! Drives bulk replays, erasures and the lanes the outcome writer left: once a second,
//! each running replay enqueues its next attempts, running erasures take their next
//! batches (for half a second at most), and lanes whose key was busy when their head
//! chain ended release their next member.

use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::watch;

pub async fn run(pool: PgPool, mut shutdown: watch::Receiver<bool>) {
    loop {
        match app::db::replays::tick(&pool).await {
            Ok(n) if n > 0 => tracing::debug!(queued = n, "bulk replay"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "bulk replay tick failed"),
        }
        match app::db::erasures::tick(&pool, Duration::from_millis(500)).await {
            Ok(n) if n > 0 => tracing::debug!(events = n, "erasures"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "erasure step failed"),
        }
        match app::db::queue::lanes::release_deferred(&pool).await {
            Ok(n) if n > 0 => tracing::debug!(released = n, "deferred lanes"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "releasing deferred lanes failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => return,
        }
    }
}
