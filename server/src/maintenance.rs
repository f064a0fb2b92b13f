//! The periodic housekeeping loop: partitions, retention, expired bins and sessions.

use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::watch;
use tower_sessions::ExpiredDeletion;

pub async fn run(pool: PgPool, retention_days: u32, mut shutdown: watch::Receiver<bool>) {
    let store = crate::web::session_store(&pool);
    loop {
        match app::db::maintenance::sweep(&pool, retention_days).await {
            Ok(s) if s.partitions_dropped + s.partitions_made > 0 || s.bins_deleted > 0 => {
                tracing::info!(?s, "maintenance")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "maintenance failed"),
        }
        let _ = store.delete_expired().await;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(60)) => {}
            _ = shutdown.changed() => return,
        }
    }
}
