//! Bulk replay ("Retry all matching"): preview, start, follow, cancel. Starting and
//! cancelling are audited in the transaction that does them.

use sqlx::PgPool;

use crate::{
    auth::Access,
    cfg::Config,
    core::{limits::Limit, permissions::Action},
    db::{audit, limits, projects, replays},
    delivery_filter::DeliveryFilter,
    error::AppResult,
    model::ReplayProgress,
};

/// How many events a replay of this view would send.
pub async fn preview(
    pool: &PgPool,
    cfg: &Config,
    access: &Access,
    filter: &DeliveryFilter,
) -> AppResult<i64> {
    access.require(Action::Replay)?;
    let days = projects::window_days(pool, access.project_id, cfg.retention_days).await?;
    replays::preview(pool, access, filter, days).await
}

pub async fn start(
    pool: &PgPool,
    cfg: &Config,
    access: &Access,
    filter: &DeliveryFilter,
) -> AppResult<ReplayProgress> {
    access.require(Action::Replay)?;
    let days = projects::window_days(pool, access.project_id, cfg.retention_days).await?;
    let mut tx = pool.begin().await?;
    limits::admit(&mut tx, access.project_id, Limit::ConcurrentReplays, 1).await?;
    let (id, total) = replays::start(
        &mut tx,
        access,
        filter,
        days,
        (cfg.replay_per_second as i32, cfg.replay_max),
    )
    .await?;
    audit::record(
        &mut *tx,
        access,
        "bulk_replay",
        &format!("replay #{id}"),
        serde_json::json!({"events": total, "filter": filter.to_query(false)}),
    )
    .await?;
    let progress = replays::progress(&mut tx, access, id).await?;
    tx.commit().await?;
    Ok(progress)
}

pub async fn progress(pool: &PgPool, access: &Access, id: i64) -> AppResult<ReplayProgress> {
    access.require(Action::ReadDeliveries)?;
    replays::progress(&mut *pool.acquire().await?, access, id).await
}

/// Stops a running replay; what it has queued already stays queued.
pub async fn cancel(pool: &PgPool, access: &Access, id: i64) -> AppResult<ReplayProgress> {
    access.require(Action::Replay)?;
    let mut tx = pool.begin().await?;
    replays::cancel(&mut tx, access, id).await?;
    audit::record(
        &mut *tx,
        access,
        "bulk_replay.cancel",
        &format!("replay #{id}"),
        serde_json::json!({}),
    )
    .await?;
    let progress = replays::progress(&mut tx, access, id).await?;
    tx.commit().await?;
    Ok(progress)
}
