//! The record of manual actions: who did what, when.

use sqlx::PgPool;

use crate::{core::permissions::Access, error::AppResult, model::AuditEntry};

/// Writes an entry; pass the action's own transaction so the entry and the change commit
/// together (or neither does).
pub async fn record(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) -> AppResult<()> {
    sqlx::query!(
        "INSERT INTO audit_log (project_id, user_id, actor, action, target, detail)
         VALUES ($1, $2, $3, $4, $5, $6)",
        access.project_id.get(),
        // System actors (the API, the CLI) have no user row.
        (access.user_id.get() > 0).then_some(access.user_id.get()),
        &access.email,
        action,
        target,
        detail,
    )
    .execute(db)
    .await?;
    Ok(())
}

pub async fn list(pool: &PgPool, access: &Access, limit: i64) -> AppResult<Vec<AuditEntry>> {
    Ok(sqlx::query_as!(
        AuditEntry,
        r#"SELECT id, actor, action, target, created_at AS "created_at: chrono::DateTime<chrono::Utc>",
                detail::text AS "detail!" FROM audit_log
         WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"#,
        access.project_id.get(),
        limit,
    )
    .fetch_all(pool)
    .await?)
}

/// An operator's call: kept apart from any project (a project's purge leaves it).
pub async fn record_operator(
    db: impl sqlx::PgExecutor<'_>,
    actor: &str,
    action: &str,
    target: &str,
    detail: serde_json::Value,
) -> AppResult<()> {
    sqlx::query!(
        "INSERT INTO audit_log (project_id, actor, action, target, detail) VALUES (NULL, $1, $2, $3, $4)",
        actor,
        action,
        target,
        detail,
    )
    .execute(db)
    .await?;
    Ok(())
}
