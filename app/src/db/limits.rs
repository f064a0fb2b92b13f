//! How much of each limit a project uses, read under a lock on the project's row so two
//! requests cannot both take the last place (`FOR NO KEY UPDATE`: other tenants, and
//! this one's own inserts referencing the project, are not held up).

use crate::core::ProjectId;
use sqlx::PgConnection;

use crate::{
    core::limits::{Limit, Limits},
    error::{AppError, AppResult},
};

/// The project's limits; reads them without a lock.
pub async fn of(conn: &mut PgConnection, project_id: ProjectId) -> AppResult<Limits> {
    let overrides = sqlx::query_scalar!(
        "SELECT limits FROM projects WHERE id = $1",
        project_id.get()
    )
    .fetch_optional(conn)
    .await?;
    Ok(Limits::from_overrides(
        &overrides.ok_or(AppError::NotFound)?,
    ))
}

/// Refuses (`limit_reached`) unless `adding` more of `limit` fit beside what the project
/// uses now; returns the project's limits. Locks the project's row until the transaction
/// ends, so the count stays true until the caller's insert commits: pass the inserting
/// transaction.
pub async fn admit(
    conn: &mut PgConnection,
    project_id: ProjectId,
    limit: Limit,
    adding: u64,
) -> AppResult<Limits> {
    let overrides = sqlx::query_scalar!(
        "SELECT limits FROM projects WHERE id = $1 FOR NO KEY UPDATE",
        project_id.get()
    )
    .fetch_optional(&mut *conn)
    .await?;
    let limits = Limits::from_overrides(&overrides.ok_or(AppError::NotFound)?);
    let used = used(conn, project_id, limit).await?;
    limits
        .admit(limit, used.max(0) as u64, adding)
        .map_err(AppError::LimitReached)?;
    Ok(limits)
}

/// Refuses an endpoint subscribed to more event types than the project allows.
pub fn admit_event_types(limits: &Limits, event_types: &[String]) -> AppResult<()> {
    limits
        .admit(Limit::EventTypesPerEndpoint, 0, event_types.len() as u64)
        .map_err(AppError::LimitReached)
}

/// What counts against each limit that is a count of rows (0 for a limit on a value,
/// checked on the value itself).
async fn used(conn: &mut PgConnection, project_id: ProjectId, limit: Limit) -> AppResult<i64> {
    Ok(match limit {
        Limit::Endpoints => sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM endpoints WHERE project_id = $1 AND deleted_at IS NULL"#,
            project_id.get()
        )
        .fetch_one(conn)
        .await?,
        Limit::ApiKeys => sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM api_keys WHERE project_id = $1 AND revoked_at IS NULL"#,
            project_id.get()
        )
        .fetch_one(conn)
        .await?,
        Limit::Members => sqlx::query_scalar!(
            r#"SELECT (SELECT count(*) FROM memberships WHERE project_id = $1)
                    + (SELECT count(*) FROM invitations
                        WHERE project_id = $1 AND used_at IS NULL AND expires_at > now()) AS "n!""#,
            project_id.get()
        )
        .fetch_one(conn)
        .await?,
        Limit::ConcurrentReplays => sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM replays WHERE project_id = $1 AND status = 'running'"#,
            project_id.get()
        )
        .fetch_one(conn)
        .await?,
        Limit::ConcurrentErasures => sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM erasures
                WHERE project_id = $1 AND status = 'running' AND subject IS NOT NULL"#,
            project_id.get()
        )
        .fetch_one(conn)
        .await?,
        Limit::EventTypesPerEndpoint | Limit::DataDepth => 0,
    })
}
