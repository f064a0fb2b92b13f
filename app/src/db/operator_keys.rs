//! Operator keys: the platform's credentials for `/operator/v1`, stored as SHA-256
//! hashes and shown once. They open nothing else.

use sqlx::PgPool;

use crate::{
    core::ids::new_token,
    error::{AppError, AppResult},
};

use super::api_keys::hash_key;

/// Makes a key named `name` (one live key per name); returns the key, shown once.
pub async fn create(pool: &PgPool, name: &str) -> AppResult<String> {
    let name = crate::core::operator::check_text("name", name, 100).map_err(AppError::Invalid)?;
    let key = format!("pho_{}", new_token());
    let done = sqlx::query!(
        "INSERT INTO operator_keys (name, prefix, key_hash) VALUES ($1, $2, $3)
         ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING",
        &name,
        &key[..12],
        hash_key(&key),
    )
    .execute(pool)
    .await?;
    if done.rows_affected() == 0 {
        return Err(AppError::Conflict(format!(
            "an operator key named `{name}` exists; revoke it first"
        )));
    }
    Ok(key)
}

/// Revokes the live key named `name`; false if there was none.
pub async fn revoke(pool: &PgPool, name: &str) -> AppResult<bool> {
    let done = sqlx::query!(
        "UPDATE operator_keys SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL",
        name,
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The name of the live key presented, if any; marks it used at most once a minute.
pub async fn authenticate(pool: &PgPool, key: &str) -> AppResult<Option<String>> {
    if key.len() > 200 {
        return Ok(None);
    }
    Ok(sqlx::query_scalar!(
        r#"WITH k AS (SELECT id, name, last_used_at FROM operator_keys
                     WHERE key_hash = $1 AND revoked_at IS NULL),
              touched AS (UPDATE operator_keys SET last_used_at = now()
                           WHERE id IN (SELECT id FROM k WHERE last_used_at IS NULL
                                           OR last_used_at < now() - interval '1 minute'))
         SELECT name AS "name!" FROM k"#,
        hash_key(key),
    )
    .fetch_optional(pool)
    .await?)
}
