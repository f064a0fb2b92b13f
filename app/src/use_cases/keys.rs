//! API keys: created (shown once) and revoked, audited in the same transaction.

use sqlx::PgPool;

use crate::{
    auth::Access,
    core::{limits::Limit, permissions::Action},
    db::{api_keys, audit, limits},
    error::AppResult,
};

/// Returns the new key: the only time it is ever shown.
pub async fn create(pool: &PgPool, access: &Access, name: &str) -> AppResult<String> {
    Ok(create_with_view(pool, access, name).await?.0)
}

/// [`create`], with the key's row.
pub async fn create_with_view(
    pool: &PgPool,
    access: &Access,
    name: &str,
) -> AppResult<(String, crate::model::ApiKeyView)> {
    access.require(Action::ManageKeys)?;
    let name: String = if name.trim().is_empty() {
        "unnamed".to_string()
    } else {
        name.trim().chars().take(100).collect()
    };
    let mut tx = pool.begin().await?;
    limits::admit(&mut tx, access.project_id, Limit::ApiKeys, 1).await?;
    let (key, view) = api_keys::create(&mut *tx, access.project_id, &name).await?;
    audit::record(
        &mut *tx,
        access,
        "api_key.create",
        &format!("key {}", view.prefix),
        serde_json::json!({"name": name}),
    )
    .await?;
    tx.commit().await?;
    Ok((key, view))
}

pub async fn revoke(pool: &PgPool, access: &Access, id: i64) -> AppResult<()> {
    access.require(Action::ManageKeys)?;
    let mut tx = pool.begin().await?;
    api_keys::revoke(&mut *tx, access, id).await?;
    audit::record(
        &mut *tx,
        access,
        "api_key.revoke",
        &format!("key #{id}"),
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
