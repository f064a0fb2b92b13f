//! Listen sessions (`posthorn listen`): endpoints whose attempts go to a developer's
//! machine over the CLI's WebSocket. The endpoint row is an ordinary endpoint with
//! `destination = 'listen'`; this module marks it so, finds a named one to reattach to,
//! and keeps the signs of life that decide when it ends.

use crate::core::{EndpointId, ProjectId};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::{core::permissions::Access, error::AppResult};

/// A session without a connected CLI for this long ends (SPEC "Listen").
pub const IDLE_END: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// Marks a just-created endpoint as a listen session named `name`.
pub async fn mark(
    conn: &mut PgConnection,
    access: &Access,
    id: EndpointId,
    name: Option<&str>,
) -> AppResult<()> {
    sqlx::query!(
        "UPDATE endpoints SET destination = 'listen', listen_name = $3, listen_seen_at = now()
          WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
        id.get(),
        access.project_id.get(),
        name
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The project's live session called `name`, locked until the caller's transaction ends
/// (two CLIs reattaching at once find the same one).
pub async fn named(
    conn: &mut PgConnection,
    access: &Access,
    name: &str,
) -> AppResult<Option<EndpointId>> {
    Ok(sqlx::query_scalar!(
        r#"SELECT id AS "id: EndpointId" FROM endpoints
          WHERE project_id = $1 AND listen_name = $2 AND deleted_at IS NULL
          FOR UPDATE"#,
        access.project_id.get(),
        name
    )
    .fetch_optional(conn)
    .await?)
}

/// How many live listen sessions the project has.
pub async fn count(conn: &mut PgConnection, access: &Access) -> AppResult<i64> {
    Ok(sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM endpoints
            WHERE project_id = $1 AND destination = 'listen' AND deleted_at IS NULL"#,
        access.project_id.get()
    )
    .fetch_one(conn)
    .await?)
}

/// Whether `id` is one of the project's live listen sessions.
pub async fn is_session(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
) -> AppResult<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM endpoints
            WHERE id = $1 AND project_id = $2 AND destination = 'listen'
              AND deleted_at IS NULL) AS "found!""#,
        id.get(),
        access.project_id.get()
    )
    .fetch_one(db)
    .await?)
}

/// A sign of life from the session's CLI: connected now (`true`), or just gone.
pub async fn seen(db: impl sqlx::PgExecutor<'_>, id: EndpointId, connected: bool) -> AppResult<()> {
    sqlx::query!(
        "UPDATE endpoints SET listen_seen_at = now(), listen_connected = $2
          WHERE id = $1 AND destination = 'listen' AND deleted_at IS NULL",
        id.get(),
        connected
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Attempts a session may hold waiting while its CLI is away: past them it ends (as after
/// [`IDLE_END`]), and they become dead letters. A connected CLI drains its backlog at its
/// own pace, whatever its size.
pub const AWAY_BUFFER: i64 = 1_000;

/// Sessions to end: their CLI has been away for [`IDLE_END`], or away (no sign of life
/// for 90 s, so a CLI that just moved to another server is not taken for gone) with more
/// than [`AWAY_BUFFER`] attempts waiting. (project, endpoint), at most 100 a call. Each
/// session's count stops at the bound: a walk of at most 1,001 entries of its parked rows.
pub async fn idle(
    db: impl sqlx::PgExecutor<'_>,
    now: DateTime<Utc>,
) -> AppResult<Vec<(ProjectId, EndpointId)>> {
    Ok(sqlx::query!(
        r#"SELECT e.project_id AS "project_id: ProjectId", e.id AS "id: EndpointId" FROM endpoints e
          WHERE e.destination = 'listen' AND e.deleted_at IS NULL
            AND (e.listen_seen_at < $1
                 OR (e.listen_seen_at < $2::timestamptz - interval '90 seconds'
                     AND (SELECT count(*) FROM (SELECT 1 FROM delivery_queue q
                                                 WHERE q.endpoint_id = e.id AND q.parked
                                                 LIMIT $3::bigint + 1) waiting) > $3::bigint))
          ORDER BY e.listen_seen_at LIMIT 100"#,
        (now - IDLE_END) as _,
        now as _,
        AWAY_BUFFER
    )
    .fetch_all(db)
    .await?
    .into_iter()
    .map(|r| (r.project_id, r.id))
    .collect())
}
