//! Fixed-window counters in PostgreSQL, so every server process shares one count.

use sqlx::PgPool;

use crate::error::AppResult;

/// Counts one hit in `bucket` for the window starting at `window_start`; returns the
/// count including this hit.
pub async fn hit(pool: &PgPool, bucket: &str, window_start: i64) -> AppResult<u32> {
    let count: i32 = sqlx::query_scalar(
        "INSERT INTO rate_counters (bucket, window_start, count) VALUES ($1, $2, 1)
         ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_counters.count + 1
         RETURNING count",
    )
    .bind(bucket)
    .bind(window_start)
    .fetch_one(pool)
    .await?;
    Ok(count.max(0) as u32)
}

/// Counts `n` hits at once (a batch of events costs one unit per event); a negative `n`
/// gives units back. Returns the count after.
pub async fn hit_by(pool: &PgPool, bucket: &str, window_start: i64, n: i32) -> AppResult<u32> {
    let count: i32 = sqlx::query_scalar(
        "INSERT INTO rate_counters (bucket, window_start, count) VALUES ($1, $2, greatest($3, 0))
         ON CONFLICT (bucket, window_start) DO UPDATE SET count = greatest(rate_counters.count + $3, 0)
         RETURNING count",
    )
    .bind(bucket)
    .bind(window_start)
    .bind(n)
    .fetch_one(pool)
    .await?;
    Ok(count.max(0) as u32)
}

pub async fn current(pool: &PgPool, bucket: &str, window_start: i64) -> AppResult<u32> {
    let count: Option<i32> = sqlx::query_scalar(
        "SELECT count FROM rate_counters WHERE bucket = $1 AND window_start = $2",
    )
    .bind(bucket)
    .bind(window_start)
    .fetch_optional(pool)
    .await?;
    Ok(count.unwrap_or(0).max(0) as u32)
}

/// Takes back one hit (a sign-in that turned out right was counted as a failure first).
pub async fn undo(pool: &PgPool, bucket: &str, window_start: i64) -> AppResult<()> {
    sqlx::query(
        "UPDATE rate_counters SET count = greatest(count - 1, 0) WHERE bucket = $1 AND window_start = $2",
    )
    .bind(bucket)
    .bind(window_start)
    .execute(pool)
    .await?;
    Ok(())
}

pub async fn clear(pool: &PgPool, bucket: &str, window_start: i64) -> AppResult<()> {
    sqlx::query("DELETE FROM rate_counters WHERE bucket = $1 AND window_start = $2")
        .bind(bucket)
        .bind(window_start)
        .execute(pool)
        .await?;
    Ok(())
}

/// Old windows are of no use; maintenance drops them.
pub async fn purge_before(pool: &PgPool, window_start: i64) -> AppResult<u64> {
    Ok(
        sqlx::query("DELETE FROM rate_counters WHERE window_start < $1")
            .bind(window_start)
            .execute(pool)
            .await?
            .rows_affected(),
    )
}
