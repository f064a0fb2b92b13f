//! Inspector bins and the requests they captured. No link to any project table.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::{core::ids::new_bin_id, error::AppResult, model::BinRequest};

/// Requests kept per bin; older ones are dropped as new ones arrive.
pub const MAX_REQUESTS_PER_BIN: i64 = 500;

pub async fn create(
    pool: &PgPool,
    ttl: std::time::Duration,
    remote_addr: Option<&str>,
) -> AppResult<(String, DateTime<Utc>)> {
    let id = new_bin_id();
    let expires_at: DateTime<Utc> = sqlx::query_scalar(
        "INSERT INTO bins (id, expires_at, remote_addr) VALUES ($1, now() + $2, $3) RETURNING expires_at",
    )
    .bind(&id)
    .bind(chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::days(7)))
    .bind(remote_addr)
    .fetch_one(pool)
    .await?;
    Ok((id, expires_at))
}

/// The bin's expiry, if it exists and has not expired.
pub async fn live(pool: &PgPool, id: &str) -> AppResult<Option<DateTime<Utc>>> {
    Ok(
        sqlx::query_scalar("SELECT expires_at FROM bins WHERE id = $1 AND expires_at > now()")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

pub struct Captured<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
    pub size: i64,
    pub status: i16,
    pub remote_addr: Option<&'a str>,
}

/// Stores a capture and trims the bin to its newest [`MAX_REQUESTS_PER_BIN`].
/// Returns false when the bin is unknown or expired.
pub async fn capture(pool: &PgPool, bin_id: &str, c: Captured<'_>) -> AppResult<bool> {
    let inserted: Option<i64> = sqlx::query_scalar(
        "INSERT INTO bin_requests (bin_id, method, path, query, headers, body, size, status, remote_addr)
         SELECT id, $2, $3, $4, $5, $6, $7, $8, $9 FROM bins WHERE id = $1 AND expires_at > now()
         RETURNING id",
    )
    .bind(bin_id)
    .bind(c.method)
    .bind(c.path)
    .bind(c.query)
    .bind(sqlx::types::Json(c.headers))
    .bind(c.body)
    .bind(c.size)
    .bind(c.status)
    .bind(c.remote_addr)
    .fetch_optional(pool)
    .await?;
    if inserted.is_none() {
        return Ok(false);
    }
    // Keep the newest 500. Concurrent captures each trim what the others have not locked,
    // so they never wait on (or deadlock with) one another.
    sqlx::query(
        "DELETE FROM bin_requests WHERE id IN (
            SELECT id FROM bin_requests WHERE bin_id = $1 ORDER BY id DESC OFFSET $2
            FOR UPDATE SKIP LOCKED)",
    )
    .bind(bin_id)
    .bind(MAX_REQUESTS_PER_BIN)
    .execute(pool)
    .await?;
    Ok(true)
}

/// Newest first; `after` returns only requests newer than that id (live updates).
pub async fn requests(
    pool: &PgPool,
    bin_id: &str,
    after: Option<i64>,
) -> AppResult<Vec<BinRequest>> {
    Ok(sqlx::query_as::<_, BinRequest>(
        "SELECT id, method, path, query, headers, body, size, status, remote_addr, received_at
         FROM bin_requests WHERE bin_id = $1 AND id > $2 ORDER BY id DESC LIMIT $3",
    )
    .bind(bin_id)
    .bind(after.unwrap_or(0))
    .bind(MAX_REQUESTS_PER_BIN)
    .fetch_all(pool)
    .await?)
}

pub async fn delete_expired(pool: &PgPool) -> AppResult<u64> {
    Ok(sqlx::query("DELETE FROM bins WHERE expires_at <= now()")
        .execute(pool)
        .await?
        .rows_affected())
}
