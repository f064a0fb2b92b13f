//! Fixed-window counters in PostgreSQL, so every server process shares one count.

use sqlx::PgPool;

use crate::error::AppResult;

/// Counts one hit in `bucket` for the window starting at `window_start`; returns the
/// count including this hit.
pub async fn hit(pool: &PgPool, bucket: &str, window_start: i64) -> AppResult<u32> {
    hit_by(pool, bucket, window_start, 1).await
}

/// Counts one hit in each of several (distinct) buckets in one statement; returns their
/// counts, in the order given.
pub async fn hit_each(pool: &PgPool, buckets: &[&str], window_start: i64) -> AppResult<Vec<u32>> {
    let buckets_owned: Vec<String> = buckets.iter().map(|b| b.to_string()).collect();
    let counted: Vec<(String, i32)> = sqlx::query!(
        "INSERT INTO rate_counters (bucket, window_start, count)
         SELECT b, $2, 1 FROM unnest($1::text[]) AS b
         ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_counters.count + 1
         RETURNING bucket, count",
        &buckets_owned,
        window_start,
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.bucket, r.count))
    .collect();
    Ok(buckets
        .iter()
        .map(|b| {
            counted
                .iter()
                .find(|(name, _)| name == b)
                .map_or(0, |(_, n)| (*n).max(0) as u32)
        })
        .collect())
}

/// Counts `n` hits at once (a batch of events costs one unit per event); a negative `n`
/// gives units back. Returns the count after.
pub async fn hit_by(pool: &PgPool, bucket: &str, window_start: i64, n: i32) -> AppResult<u32> {
    let count: i32 = sqlx::query_scalar!(
        "INSERT INTO rate_counters (bucket, window_start, count) VALUES ($1, $2, greatest($3, 0))
         ON CONFLICT (bucket, window_start) DO UPDATE SET count = greatest(rate_counters.count + $3, 0)
         RETURNING count",
        bucket,
        window_start,
        n,
    )
    .fetch_one(pool)
    .await?;
    Ok(count.max(0) as u32)
}

pub async fn clear(pool: &PgPool, bucket: &str, window_start: i64) -> AppResult<()> {
    sqlx::query!(
        "DELETE FROM rate_counters WHERE bucket = $1 AND window_start = $2",
        bucket,
        window_start,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Old windows are of no use; maintenance drops them.
pub async fn purge_before(pool: &PgPool, window_start: i64) -> AppResult<u64> {
    Ok(sqlx::query!(
        "DELETE FROM rate_counters WHERE window_start < $1",
        window_start
    )
    .execute(pool)
    .await?
    .rows_affected())
}
