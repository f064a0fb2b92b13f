//! Event-type schemas: stored as sent, at most [`MAX_PER_PROJECT`] per project.

use crate::core::ProjectId;
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::{
    core::schema::MAX_PER_PROJECT,
    error::{AppError, AppResult},
};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct StoredSchema {
    pub event_type: String,
    /// The schema as sent (JSON text).
    pub schema: String,
    pub version: i32,
    pub updated_at: DateTime<Utc>,
}

/// Sets the type's schema (checked by the caller); returns it as stored and whether it
/// is new. A new one past the project's limit is refused.
pub async fn put(
    tx: &mut sqlx::PgConnection,
    project_id: ProjectId,
    event_type: &str,
    schema: &str,
) -> AppResult<(StoredSchema, bool)> {
    // The project's row, locked: two requests adding the 200th schema take turns.
    let count = sqlx::query_scalar!(
        "SELECT event_schemas FROM projects WHERE id = $1 FOR UPDATE",
        project_id.get()
    )
    .fetch_one(&mut *tx)
    .await?;
    let exists = get(&mut *tx, project_id, event_type).await?.is_some();
    if !exists && i64::from(count) >= MAX_PER_PROJECT {
        return Err(AppError::LimitReached(format!(
            "at most {MAX_PER_PROJECT} event-type schemas per project; delete one first"
        )));
    }
    let stored = sqlx::query_as!(
        StoredSchema,
        r#"INSERT INTO event_type_schemas (project_id, event_type, schema) VALUES ($1, $2, $3)
         ON CONFLICT (project_id, event_type) DO UPDATE
            SET schema = EXCLUDED.schema, version = event_type_schemas.version + 1, updated_at = now()
         RETURNING event_type, schema, version, updated_at AS "updated_at: DateTime<Utc>""#,
        project_id.get(),
        event_type,
        schema,
    )
    .fetch_one(&mut *tx)
    .await?;
    Ok((stored, !exists))
}

pub async fn get<'c>(
    db: impl sqlx::PgExecutor<'c>,
    project_id: ProjectId,
    event_type: &str,
) -> AppResult<Option<StoredSchema>> {
    Ok(sqlx::query_as!(
        StoredSchema,
        r#"SELECT event_type, schema, version, updated_at AS "updated_at: DateTime<Utc>"
           FROM event_type_schemas
          WHERE project_id = $1 AND event_type = $2"#,
        project_id.get(),
        event_type,
    )
    .fetch_optional(db)
    .await?)
}

/// Removes the type's schema; false when it had none. Locks the project's row first, as
/// [`put`] does, so that the two take turns.
pub async fn delete(
    tx: &mut sqlx::PgConnection,
    project_id: ProjectId,
    event_type: &str,
) -> AppResult<bool> {
    sqlx::query!(
        "SELECT 1 AS one FROM projects WHERE id = $1 FOR UPDATE",
        project_id.get()
    )
    .fetch_optional(&mut *tx)
    .await?;
    let deleted = sqlx::query!(
        "DELETE FROM event_type_schemas WHERE project_id = $1 AND event_type = $2",
        project_id.get(),
        event_type,
    )
    .execute(&mut *tx)
    .await?;
    Ok(deleted.rows_affected() > 0)
}

/// Every schema of the project, by type.
pub async fn list(pool: &PgPool, project_id: ProjectId) -> AppResult<Vec<StoredSchema>> {
    Ok(sqlx::query_as!(
        StoredSchema,
        r#"SELECT event_type, schema, version, updated_at AS "updated_at: DateTime<Utc>"
           FROM event_type_schemas
          WHERE project_id = $1 ORDER BY event_type"#,
        project_id.get(),
    )
    .fetch_all(pool)
    .await?)
}
