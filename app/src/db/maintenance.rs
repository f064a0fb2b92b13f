//! Housekeeping: delivery partitions ahead of time, retention, expired bins, counters.

use sqlx::PgPool;

use crate::error::AppResult;

#[derive(Debug, Default)]
pub struct Swept {
    pub partitions_made: i32,
    pub partitions_dropped: i32,
    pub events_deleted: u64,
    pub bins_deleted: u64,
    /// Waiting attempts found unparked on a disabled endpoint, or alive on a deleted one
    /// (written while it changed), now parked or dead-lettered.
    pub strays_settled: i64,
}

pub async fn ensure_partitions(pool: &PgPool, days_back: i32, days_ahead: i32) -> AppResult<i32> {
    Ok(sqlx::query_scalar!(
        r#"SELECT posthorn_ensure_delivery_partitions(
            (now() AT TIME ZONE 'UTC')::date - $1::int, (now() AT TIME ZONE 'UTC')::date + $2::int) AS "made!""#,
        days_back,
        days_ahead,
    )
    .fetch_one(pool)
    .await?)
}

/// One bounded step of trimming the history of projects whose `retention_days` is
/// shorter than the server's window (`posthorn_trim_short_windows`): at most `batch`
/// attempts and `batch` events per such project. Returns (attempts, events) removed.
pub async fn trim_short_windows(
    pool: &PgPool,
    server_days: u32,
    batch: i32,
) -> AppResult<(i64, i64)> {
    let trimmed = sqlx::query!(
        r#"SELECT attempts AS "attempts!", events AS "events!"
             FROM posthorn_trim_short_windows($1, $2)"#,
        server_days as i32,
        batch,
    )
    .fetch_one(pool)
    .await?;
    Ok((trimmed.attempts, trimmed.events))
}

pub async fn sweep(pool: &PgPool, retention_days: u32) -> AppResult<Swept> {
    let partitions_made = ensure_partitions(pool, 1, 7).await?;
    // One day beyond the window is kept so "the last 14 days" is always whole.
    let partitions_dropped = sqlx::query_scalar!(
        r#"SELECT posthorn_drop_delivery_partitions($1) AS "dropped!""#,
        retention_days as i32 + 1
    )
    .fetch_one(pool)
    .await?;
    let events_deleted = sqlx::query!(
        // An event with a delivery still waiting (a disabled endpoint's) is kept: its
        // payload is what will be sent when the endpoint is enabled again.
        "DELETE FROM events WHERE id IN (
            SELECT e.id FROM events e
            WHERE e.created_at < now() - make_interval(days => $1 + 1)
              AND NOT EXISTS (SELECT 1 FROM delivery_queue d WHERE d.event_id = e.event_id)
            LIMIT 10000)",
        retention_days as i32,
    )
    .execute(pool)
    .await?
    .rows_affected();
    let bins_deleted = super::bins::delete_expired(pool).await?;
    let strays_settled = sqlx::query_scalar!(r#"SELECT posthorn_settle_strays() AS "settled!""#)
        .fetch_one(pool)
        .await?;
    super::rate_counters::purge_before(pool, chrono::Utc::now().timestamp() - 3600).await?;
    Ok(Swept {
        partitions_made,
        partitions_dropped,
        events_deleted,
        bins_deleted,
        strays_settled,
    })
}
