//! API keys: stored as SHA-256 hashes, shown once at creation.

use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::{
    auth::Access,
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
    project_id: i64,
    name: &str,
) -> AppResult<(String, ApiKeyView)> {
    let (key, prefix) = new_api_key();
    let view = sqlx::query_as::<_, ApiKeyView>(
        "INSERT INTO api_keys (project_id, name, prefix, key_hash) VALUES ($1, $2, $3, $4)
         RETURNING id, name, prefix, created_at, last_used_at, revoked_at",
    )
    .bind(project_id)
    .bind(name)
    .bind(prefix)
    .bind(hash_key(&key))
    .fetch_one(db)
    .await?;
    Ok((key, view))
}

pub struct KeyOwner {
    pub key_id: i64,
    pub project_id: i64,
    pub plan: Plan,
}

/// Looks a presented key up; revoked keys are unknown. Marks it used (at most once a
/// minute per key, to keep the hot path free of writes).
pub async fn authenticate(pool: &PgPool, key: &str) -> AppResult<Option<KeyOwner>> {
    let row = sqlx::query_as::<_, (i64, i64, String)>(
        "WITH k AS (
            SELECT k.id, k.project_id, p.plan, k.last_used_at FROM api_keys k
            JOIN projects p ON p.id = k.project_id
            WHERE k.key_hash = $1 AND k.revoked_at IS NULL
         ), touched AS (
            UPDATE api_keys SET last_used_at = now()
            WHERE id IN (SELECT id FROM k WHERE last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
         )
         SELECT id, project_id, plan FROM k",
    )
    .bind(hash_key(key))
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|(key_id, project_id, plan)| KeyOwner {
        key_id,
        project_id,
        plan: Plan::parse(&plan).unwrap_or(Plan::Trial),
    }))
}

pub async fn list(pool: &PgPool, access: &Access) -> AppResult<Vec<ApiKeyView>> {
    Ok(sqlx::query_as::<_, ApiKeyView>(
        "SELECT id, name, prefix, created_at, last_used_at, revoked_at FROM api_keys
         WHERE project_id = $1 ORDER BY revoked_at IS NOT NULL, created_at DESC",
    )
    .bind(access.project_id)
    .fetch_all(pool)
    .await?)
}

pub async fn revoke(db: impl sqlx::PgExecutor<'_>, access: &Access, id: i64) -> AppResult<()> {
    super::found(
        sqlx::query(
            "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND project_id = $2",
        )
        .bind(id)
        .bind(access.project_id)
        .execute(db)
        .await?
        .rows_affected(),
    )
}
