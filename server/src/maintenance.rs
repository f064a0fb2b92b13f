//! The periodic housekeeping loop: partitions, retention, expired bins and sessions, old
//! alert mail.

use std::{sync::Arc, time::Duration};

use sqlx::PgPool;
use tokio::sync::watch;
use tower_sessions::ExpiredDeletion;

use crate::metrics::Metrics;

/// How long the record of alert mail is kept: past every daily limit that counts it,
/// and long enough to tell a member why mail stopped.
const ALERT_MAIL_KEPT_DAYS: i32 = 30;

pub async fn run(
    pool: PgPool,
    retention_days: u32,
    auto_disable_after: Duration,
    metrics: Arc<Metrics>,
    mut shutdown: watch::Receiver<bool>,
) {
    let store = crate::web::session_store(&pool);
    tokio::spawn(purge_deleted_projects(pool.clone(), shutdown.clone()));
    tokio::spawn(trim_short_windows(
        pool.clone(),
        retention_days,
        metrics,
        shutdown.clone(),
    ));
    loop {
        if let Err(e) = disable_failing_endpoints(&pool, auto_disable_after).await {
            tracing::warn!(error = %e, "failing-endpoint check failed");
        }
        match app::db::maintenance::sweep(&pool, retention_days).await {
            Ok(s) if s.partitions_dropped + s.partitions_made > 0 || s.bins_deleted > 0 => {
                tracing::info!(?s, "maintenance")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "maintenance failed"),
        }
        if let Err(e) = app::db::alert_mails::purge_finished(&pool, ALERT_MAIL_KEPT_DAYS).await {
            tracing::warn!(error = %e, "alert mail purge failed");
        }
        let _ = store.delete_expired().await;
        if let Err(e) = app::db::portal::sweep(&pool).await {
            tracing::warn!(error = %e, "portal sweep failed");
        }
        match app::use_cases::listen::end_idle(&pool).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(sessions = n, "listen sessions ended after 10 idle minutes"),
            Err(e) => tracing::warn!(error = %e, "ending idle listen sessions failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(60)) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Rows one purge statement removes: small enough that no statement holds locks long.
const PURGE_BATCH: i32 = 5_000;

/// Purges deleted projects' data in bounded batches, one project at a time, pausing
/// between batches so the purge never crowds out the traffic of live projects.
async fn purge_deleted_projects(pool: PgPool, mut shutdown: watch::Receiver<bool>) {
    let mut removed: i64 = 0;
    loop {
        let pause = match app::db::tenants::purge_step(&pool, PURGE_BATCH).await {
            Ok(0) => {
                if removed > 0 {
                    tracing::info!(rows = removed, "deleted projects purged");
                    removed = 0;
                }
                Duration::from_secs(10)
            }
            Ok(n) => {
                removed += n;
                Duration::from_millis(50)
            }
            Err(e) => {
                tracing::warn!(error = %e, "project purge failed");
                Duration::from_secs(10)
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Trims the history of projects whose operator set a shorter `retention_days` than the
/// server's window, in bounded steps with pauses between them, counting what it removes
/// in `/metrics`.
async fn trim_short_windows(
    pool: PgPool,
    server_days: u32,
    metrics: Arc<Metrics>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let pause =
            match app::db::maintenance::trim_short_windows(&pool, server_days, PURGE_BATCH).await {
                Ok((0, 0)) => Duration::from_secs(60),
                Ok((attempts, events)) => {
                    metrics.trimmed(attempts as u64, events as u64);
                    Duration::from_millis(50)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "retention trim failed");
                    Duration::from_secs(60)
                }
            };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Disables endpoints that have failed every attempt for `after`, and tells each
/// project (its operations endpoint, and by e-mail) with an `endpoint.disabled` notice.
pub async fn disable_failing_endpoints(
    pool: &PgPool,
    after: Duration,
) -> app::error::AppResult<usize> {
    let disabled = app::db::endpoints::auto_disable(pool, after).await?;
    for (id, project_id, url) in &disabled {
        tracing::warn!(
            endpoint = %id,
            project = %project_id,
            "endpoint disabled after failing for too long"
        );
        let data = serde_json::json!({ "endpoint_id": id, "url": url, "reason": "every attempt failed", "after_seconds": after.as_secs() });
        let mut tx = pool.begin().await?;
        app::db::notices::emit(&mut tx, *project_id, id.get(), "endpoint.disabled", &data).await?;
        tx.commit().await?;
    }
    Ok(disabled.len())
}
