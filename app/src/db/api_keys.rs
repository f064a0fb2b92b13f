//! API keys: stored as SHA-256 hashes, shown once at creation.

use crate::core::ProjectId;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::{
    core::permissions::Access,
    core::{ids::new_api_key, ratelimit::Plan},
    error::AppResult,
    model::ApiKeyView,
};

pub fn hash_key(key: &str) -> Vec<u8> {
    Sha256::digest(key.as_bytes()).to_vec()
}

/// Creates a key for the project; returns the key (shown once) and its row.
pub async fn create(
    db: impl sqlx::PgExecutor<'_>,
    project_id: ProjectId,
    name: &str,
) -> AppResult<(String, ApiKeyView)> {
    let (key, prefix) = new_api_key();
    let view = sqlx::query_as!(
        ApiKeyView,
        r#"INSERT INTO api_keys (project_id, name, prefix, key_hash) VALUES ($1, $2, $3, $4)
         RETURNING id, name, prefix, created_at AS "created_at: DateTime<Utc>",
                   last_used_at AS "last_used_at: DateTime<Utc>", revoked_at AS "revoked_at: DateTime<Utc>""#,
        project_id.get(),
        name,
        prefix,
        hash_key(&key),
    )
    .fetch_one(db)
    .await?;
    Ok((key, view))
}

pub struct KeyOwner {
    pub key_id: i64,
    pub project_id: ProjectId,
    pub plan: Plan,
    /// The project's endpoints as this lookup saw them (see the `endpoints_version`
    /// migration): endpoints read at this version are as fresh as the key.
    pub endpoints_version: i64,
    /// How many event-type schemas the project has (none: ingest looks for none).
    pub event_schemas: i32,
    /// How deeply an event's `data` may nest in this project (SPEC "Limits").
    pub data_depth: u32,
    /// The operator's override of the plan's requests per minute, if set.
    pub per_minute: Option<u32>,
    /// The operator's `retention_days`, if set (the server's window still bounds it).
    pub retention_days: Option<u32>,
    /// The project passes W3C trace context on to its receivers.
    pub trace_propagation: bool,
}

impl KeyOwner {
    /// The owner as one lookup row gives it, with what the project's `limits` say.
    fn new(
        key_id: i64,
        project_id: ProjectId,
        plan: &str,
        (endpoints_version, event_schemas, trace_propagation): (i64, i32, bool),
        limits: &serde_json::Value,
    ) -> KeyOwner {
        use crate::core::operator::{override_of, API_REQUESTS_PER_MINUTE, RETENTION_DAYS};
        KeyOwner {
            key_id,
            project_id,
            plan: Plan::parse(plan).unwrap_or(Plan::Trial),
            endpoints_version,
            event_schemas,
            data_depth: crate::core::limits::Limits::from_overrides(limits)
                .get(crate::core::limits::Limit::DataDepth),
            per_minute: override_of(limits, API_REQUESTS_PER_MINUTE),
            retention_days: override_of(limits, RETENTION_DAYS),
            trace_propagation,
        }
    }
}

/// Looks a presented key up (revoked keys are unknown) and, for a known key, counts one
/// hit on its rate counter (the bucket [`key_bucket`] names) for the window starting at
/// `window_start`, in one statement, so the count costs the request no round trip of
/// its own. Marks the key used at most once a minute, to keep the hot path free of
/// logged writes. Returns the owner and the count including this hit.
pub async fn authenticate_counting<'c>(
    pool: impl sqlx::PgExecutor<'c>,
    key: &str,
    window_start: i64,
) -> AppResult<Option<(KeyOwner, u32)>> {
    let row = sqlx::query!(
        r#"WITH k AS (
            SELECT k.id, k.project_id, p.plan, p.endpoints_version, p.limits, k.last_used_at,
                   p.event_schemas, p.trace_propagation FROM api_keys k
            JOIN projects p ON p.id = k.project_id AND p.deleted_at IS NULL
            WHERE k.key_hash = $1 AND k.revoked_at IS NULL
         ), touched AS (
            UPDATE api_keys SET last_used_at = now()
            WHERE id IN (SELECT id FROM k WHERE last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
         ), counted AS (
            INSERT INTO rate_counters (bucket, window_start, count)
            SELECT $3 || id, $2, 1 FROM k
            ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_counters.count + 1
            RETURNING count
         )
         SELECT k.id AS "key_id!", k.project_id AS "project_id!: ProjectId", k.plan AS "plan!",
                k.endpoints_version AS "endpoints_version!", counted.count AS "count!",
                k.limits AS "limits!", k.event_schemas AS "event_schemas!",
                k.trace_propagation AS "trace_propagation!" FROM k, counted"#,
        hash_key(key),
        window_start,
        KEY_BUCKET,
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| {
        let versions = (r.endpoints_version, r.event_schemas, r.trace_propagation);
        let owner = KeyOwner::new(r.key_id, r.project_id, &r.plan, versions, &r.limits);
        (owner, r.count.max(0) as u32)
    }))
}

/// [`authenticate_counting`] for several requests in one statement (the same key may be
/// presented many times): each answer is what the request would have got counted alone,
/// in the order given, so the counts stay exact per key across server processes.
pub async fn authenticate_counting_all<'c>(
    pool: impl sqlx::PgExecutor<'c>,
    asked: &[(&str, i64)],
) -> AppResult<Vec<Option<(KeyOwner, u32)>>> {
    // Each (key, window) once, with how many requests present it.
    let mut distinct: Vec<(Vec<u8>, i64, i32)> = Vec::new();
    let place: Vec<(usize, i32)> = asked
        .iter()
        .map(|(key, window)| {
            let hash = hash_key(key);
            match distinct
                .iter()
                .position(|(h, w, _)| *h == hash && w == window)
            {
                Some(i) => {
                    distinct[i].2 += 1;
                    (i, distinct[i].2 - 1)
                }
                None => {
                    distinct.push((hash, *window, 1));
                    (distinct.len() - 1, 0)
                }
            }
        })
        .collect();
    let rows = sqlx::query!(
        r#"WITH asked AS (
            SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::int[]) AS a(key_hash, window_start, n)
         ), k AS (
            SELECT k.id, k.project_id, p.plan, p.endpoints_version, p.limits, k.last_used_at, a.key_hash,
                   a.window_start, a.n, p.event_schemas, p.trace_propagation
            FROM asked a
            JOIN api_keys k ON k.key_hash = a.key_hash AND k.revoked_at IS NULL
            JOIN projects p ON p.id = k.project_id AND p.deleted_at IS NULL
         ), touched AS (
            UPDATE api_keys SET last_used_at = now()
            WHERE id IN (SELECT id FROM k WHERE last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
         ), counted AS (
            -- In one order everywhere: two groups never wait for each other's counters.
            INSERT INTO rate_counters (bucket, window_start, count)
            SELECT $4 || id, window_start, n FROM k ORDER BY id, window_start
            ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_counters.count + EXCLUDED.count
            RETURNING bucket, window_start, count
         )
         SELECT k.key_hash AS "key_hash!", k.window_start AS "window_start!", k.id AS "key_id!",
                k.project_id AS "project_id!: ProjectId", k.plan AS "plan!",
                k.endpoints_version AS "endpoints_version!", c.count AS "count!",
                k.limits AS "limits!", k.event_schemas AS "event_schemas!",
                k.trace_propagation AS "trace_propagation!"
         FROM k JOIN counted c ON c.bucket = $4 || k.id AND c.window_start = k.window_start"#,
        &distinct.iter().map(|d| d.0.clone()).collect::<Vec<Vec<u8>>>(),
        &distinct.iter().map(|d| d.1).collect::<Vec<i64>>(),
        &distinct.iter().map(|d| d.2).collect::<Vec<i32>>(),
        KEY_BUCKET,
    )
    .fetch_all(pool)
    .await?;
    Ok(place
        .iter()
        .map(|(i, nth)| {
            let (hash, window, n) = &distinct[*i];
            let r = rows
                .iter()
                .find(|r| r.key_hash == *hash && r.window_start == *window)?;
            let versions = (r.endpoints_version, r.event_schemas, r.trace_propagation);
            let owner = KeyOwner::new(r.key_id, r.project_id, &r.plan, versions, &r.limits);
            // The count after all of them, less the ones presented after this one.
            Some((owner, (r.count - *n + 1 + *nth).max(0) as u32))
        })
        .collect())
}

/// The rate counter of one API key (requests and event units count against it) is
/// this prefix and the key's id.
const KEY_BUCKET: &str = "key:";

pub fn key_bucket(key_id: i64) -> String {
    format!("{KEY_BUCKET}{key_id}")
}

pub async fn list(pool: &PgPool, access: &Access) -> AppResult<Vec<ApiKeyView>> {
    Ok(sqlx::query_as!(
        ApiKeyView,
        r#"SELECT id, name, prefix, created_at AS "created_at: DateTime<Utc>",
                last_used_at AS "last_used_at: DateTime<Utc>", revoked_at AS "revoked_at: DateTime<Utc>"
           FROM api_keys WHERE project_id = $1 ORDER BY revoked_at IS NOT NULL, created_at DESC"#,
        access.project_id.get(),
    )
    .fetch_all(pool)
    .await?)
}

pub async fn revoke(db: impl sqlx::PgExecutor<'_>, access: &Access, id: i64) -> AppResult<()> {
    super::found(
        sqlx::query!(
            "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND project_id = $2",
            id,
            access.project_id.get(),
        )
        .execute(db)
        .await?
        .rows_affected(),
    )
}
