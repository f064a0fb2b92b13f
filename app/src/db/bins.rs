//! Inspector bins and the requests they captured. No link to any project table.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::{core::ids::new_bin_id, error::AppResult, model::BinRequest};

/// Requests kept per bin; older ones are dropped as new ones arrive.
pub const MAX_REQUESTS_PER_BIN: i64 = 500;

pub async fn create(
    db: impl sqlx::PgExecutor<'_>,
    ttl: std::time::Duration,
    remote_addr: Option<&str>,
) -> AppResult<(String, DateTime<Utc>)> {
    let id = new_bin_id();
    let expires_at: DateTime<Utc> = sqlx::query_scalar!(
        r#"INSERT INTO bins (id, expires_at, remote_addr) VALUES ($1, now() + $2, $3)
         RETURNING expires_at AS "expires_at: DateTime<Utc>""#,
        &id,
        chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::days(7)) as _,
        remote_addr,
    )
    .fetch_one(db)
    .await?;
    Ok((id, expires_at))
}

/// The bin's expiry, if it exists and has not expired.
pub async fn live(pool: &PgPool, id: &str) -> AppResult<Option<DateTime<Utc>>> {
    Ok(
        sqlx::query_scalar!(
            r#"SELECT expires_at AS "expires_at: DateTime<Utc>" FROM bins WHERE id = $1 AND expires_at > now()"#,
            id,
        )
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
    /// Whom its storage counts against ([`crate::core::capture_source::CaptureSource::usage_key`]).
    pub source: &'a str,
    /// The attempt's request id, when the capture is a delivery from the dispatcher.
    pub request_id: Option<&'a str>,
}

/// The storage a capture may use: per bin (its oldest captures go first), for the whole
/// inspector and for its source (new captures are refused once either is spent).
#[derive(Clone, Copy, Debug)]
pub struct Quotas {
    pub per_bin_bytes: i64,
    pub total_bytes: i64,
    pub per_source_bytes: i64,
}

/// What became of a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    Yes,
    /// The bin is unknown or has expired.
    NoSuchBin,
    /// The inspector's storage budget is spent.
    Full,
    /// Its source holds its whole share of the budget.
    ShareSpent,
}

/// Stores a capture and trims the bin to its newest [`MAX_REQUESTS_PER_BIN`] captures and
/// its byte quota.
pub async fn capture(
    pool: &PgPool,
    bin_id: &str,
    c: Captured<'_>,
    quotas: Quotas,
) -> AppResult<Stored> {
    let headers = sqlx::types::Json(c.headers);
    // Roughly what the headers take as stored JSON (`["name","value"],` per pair).
    let header_bytes: i64 = c
        .headers
        .iter()
        .map(|(k, v)| (k.len() + v.len() + 6) as i64)
        .sum();
    let stored_bytes = c.body.len() as i64 + header_bytes;
    let verdict = sqlx::query!(
        r#"WITH usage AS (
            SELECT (SELECT bytes FROM inspector_usage) + $10 <= $11 AS total_ok,
                   coalesce((SELECT bytes FROM inspector_source_usage WHERE source = $12), 0) + $10 <= $13
                     AS share_ok
         ), inserted AS (
            INSERT INTO bin_requests (bin_id, method, path, query, headers, body, size, status, remote_addr,
                                      stored_bytes, source, request_id)
            SELECT b.id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $14 FROM bins b, usage u
            WHERE b.id = $1 AND b.expires_at > now() AND u.total_ok AND u.share_ok
              -- A deleted project's attempt still in flight leaves no copy behind the
              -- deletion's (see `tenants::delete`).
              AND ($15::bigint IS NULL OR EXISTS (
                    SELECT 1 FROM projects p WHERE p.id = $15 AND p.deleted_at IS NULL))
            RETURNING id
         )
         SELECT EXISTS (SELECT 1 FROM inserted) AS "inserted!", total_ok AS "total_ok!",
                share_ok AS "share_ok!" FROM usage"#,
        bin_id,
        c.method,
        c.path,
        c.query,
        headers as _,
        c.body,
        c.size,
        c.status,
        c.remote_addr,
        stored_bytes,
        quotas.total_bytes,
        c.source,
        quotas.per_source_bytes,
        c.request_id,
        sending_project(c.source),
    )
    .fetch_one(pool)
    .await?;
    let (inserted, total_ok, share_ok) = (verdict.inserted, verdict.total_ok, verdict.share_ok);
    if !inserted {
        return Ok(if !share_ok {
            Stored::ShareSpent
        } else if !total_ok {
            Stored::Full
        } else {
            Stored::NoSuchBin
        });
    }
    // Keep the newest captures within both limits. Concurrent captures each trim what the
    // others have not locked, so they never wait on (or deadlock with) one another.
    sqlx::query!(
        "DELETE FROM bin_requests WHERE id IN (
            SELECT id FROM bin_requests WHERE id IN (
                SELECT id FROM (
                    SELECT id, row_number() OVER w AS n, sum(stored_bytes) OVER w AS bytes
                    FROM bin_requests WHERE bin_id = $1
                    WINDOW w AS (ORDER BY id DESC)
                ) newest_first
                WHERE n > $2 OR bytes > $3)
            FOR UPDATE SKIP LOCKED)",
        bin_id,
        MAX_REQUESTS_PER_BIN,
        quotas.per_bin_bytes as _,
    )
    .execute(pool)
    .await?;
    Ok(Stored::Yes)
}

/// The project whose delivery a capture is, from its source (`project:42`, see
/// [`crate::core::capture_source::CaptureSource::usage_key`]).
fn sending_project(source: &str) -> Option<i64> {
    source.strip_prefix("project:")?.parse().ok()
}

/// One page of a bin's captures, newest first: newer than `after` (live updates) or
/// older than `before` (paging back). Bodies come inline while their running total stays
/// within `inline_budget` and each is at most `inline_max`; the rest are marked
/// `truncated` and fetched alone with [`body`], so a page never loads every body at once.
/// Headers count too: the page ends early once theirs pass a quarter of the budget.
pub async fn page(
    pool: &PgPool,
    bin_id: &str,
    after: Option<i64>,
    before: Option<i64>,
    limit: i64,
    inline_budget: i64,
    inline_max: i64,
) -> AppResult<Vec<BinRequest>> {
    let rows = sqlx::query!(
        r#"WITH ids AS (
            SELECT id, octet_length(body) AS len, stored_bytes - octet_length(body) AS head
            FROM bin_requests
            WHERE bin_id = $1 AND id > $2 AND id < $3 ORDER BY id DESC LIMIT $4
         ), flags AS (
            SELECT id, len <= $6 AND sum(len) OVER w <= $5 AS inline,
                   sum(head) OVER w AS heads, row_number() OVER w AS n
            FROM ids WINDOW w AS (ORDER BY id DESC)
         )
         SELECT r.id, r.method, r.path, r.query,
                r.headers AS "headers: sqlx::types::Json<Vec<(String, String)>>",
                CASE WHEN f.inline THEN r.body ELSE ''::bytea END AS "body!",
                NOT f.inline AS "truncated!",
                r.size, r.status, r.remote_addr, r.received_at AS "received_at: DateTime<Utc>",
                r.erased_at AS "erased_at: DateTime<Utc>"
         FROM flags f JOIN bin_requests r ON r.id = f.id
         WHERE f.n = 1 OR f.heads <= $5 / 4
         ORDER BY r.id DESC"#,
        bin_id,
        after.unwrap_or(0),
        before.unwrap_or(i64::MAX),
        limit.clamp(1, MAX_REQUESTS_PER_BIN),
        inline_budget,
        inline_max as _,
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| BinRequest {
            id: r.id,
            method: r.method,
            path: r.path,
            query: r.query,
            headers: r.headers.0,
            body: r.body,
            truncated: r.truncated,
            size: r.size,
            status: r.status,
            remote_addr: r.remote_addr,
            received_at: r.received_at,
            erased_at: r.erased_at,
        })
        .collect())
}

/// Whether the bin holds captures older than `id` (for the list's cursor).
pub async fn older_exists(pool: &PgPool, bin_id: &str, id: i64) -> AppResult<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM bin_requests WHERE bin_id = $1 AND id < $2) AS "older!""#,
        bin_id,
        id,
    )
    .fetch_one(pool)
    .await?)
}

/// One capture's body, for captures whose body did not come with the list.
pub async fn body(pool: &PgPool, bin_id: &str, request_id: i64) -> AppResult<Option<Vec<u8>>> {
    Ok(sqlx::query_scalar!(
        "SELECT r.body FROM bin_requests r JOIN bins b ON b.id = r.bin_id
         WHERE r.bin_id = $1 AND r.id = $2 AND b.expires_at > now()",
        bin_id,
        request_id,
    )
    .fetch_optional(pool)
    .await?)
}

pub async fn delete_expired(pool: &PgPool) -> AppResult<u64> {
    Ok(sqlx::query!("DELETE FROM bins WHERE expires_at <= now()",)
        .execute(pool)
        .await?
        .rows_affected())
}
