//! Projects: made with their first owner, listed for the people who may see them.

use crate::core::{EndpointId, ProjectId, UserId};
use sqlx::PgPool;

use crate::{error::AppResult, model::ProjectRef};

pub async fn create(
    pool: &PgPool,
    name: &str,
    plan: &str,
    owner_id: UserId,
) -> AppResult<ProjectRef> {
    let mut tx = pool.begin().await?;
    let project = sqlx::query_as!(
        ProjectRef,
        "INSERT INTO projects (name, plan) VALUES ($1, $2) RETURNING id, name, plan",
        name,
        plan,
    )
    .fetch_one(&mut *tx)
    .await?;
    super::memberships::add(&mut tx, project.id, owner_id, "owner").await?;
    tx.commit().await?;
    Ok(project)
}

/// The projects a user sees: their memberships, or every project for support staff.
pub async fn visible_to(
    pool: &PgPool,
    user_id: UserId,
    is_support: bool,
) -> AppResult<Vec<ProjectRef>> {
    let rows = if is_support {
        sqlx::query_as!(
            ProjectRef,
            "SELECT id, name, plan FROM projects WHERE deleted_at IS NULL ORDER BY name, id LIMIT 1000",
        )
        .fetch_all(pool)
        .await?
    } else {
        sqlx::query_as!(
            ProjectRef,
            "SELECT p.id, p.name, p.plan FROM projects p JOIN memberships m ON m.project_id = p.id
             WHERE m.user_id = $1 AND p.deleted_at IS NULL ORDER BY p.name, p.id",
            user_id.get(),
        )
        .fetch_all(pool)
        .await?
    };
    Ok(rows)
}

pub async fn find_by_owner_and_name(
    pool: &PgPool,
    owner_id: UserId,
    name: &str,
) -> AppResult<Option<ProjectRef>> {
    Ok(sqlx::query_as!(
        ProjectRef,
        "SELECT p.id, p.name, p.plan FROM projects p JOIN memberships m ON m.project_id = p.id
         WHERE m.user_id = $1 AND m.role = 'owner' AND p.name = $2 AND p.deleted_at IS NULL ORDER BY p.id LIMIT 1",
        owner_id.get(),
        name,
    )
    .fetch_optional(pool)
    .await?)
}

pub async fn get(pool: &PgPool, id: ProjectId) -> AppResult<Option<ProjectRef>> {
    Ok(sqlx::query_as!(
        ProjectRef,
        "SELECT id, name, plan FROM projects WHERE id = $1 AND deleted_at IS NULL",
        id.get(),
    )
    .fetch_optional(pool)
    .await?)
}

/// The endpoint that receives the project's operational notices, if one is chosen.
pub async fn ops_endpoint(
    db: impl sqlx::PgExecutor<'_>,
    project_id: ProjectId,
) -> AppResult<Option<i64>> {
    Ok(sqlx::query_scalar!(
        "SELECT ops_endpoint_id FROM projects WHERE id = $1",
        project_id.get()
    )
    .fetch_optional(db)
    .await?
    .flatten())
}

/// Where notices about `about` go: the project's ops endpoint, unless it is `about`
/// itself (a notice that an endpoint failed is not sent to that endpoint) or deleted.
pub async fn ops_target(
    db: impl sqlx::PgExecutor<'_>,
    project_id: ProjectId,
    about: i64,
) -> AppResult<Option<(i64, String)>> {
    Ok(sqlx::query!(
        "SELECT e.id, e.url FROM projects p JOIN endpoints e ON e.id = p.ops_endpoint_id
         WHERE p.id = $1 AND e.deleted_at IS NULL AND e.id <> $2",
        project_id.get(),
        about,
    )
    .fetch_optional(db)
    .await?
    .map(|r| (r.id, r.url)))
}

pub async fn set_ops_endpoint(
    db: impl sqlx::PgExecutor<'_>,
    project_id: ProjectId,
    endpoint_id: EndpointId,
) -> AppResult<()> {
    sqlx::query!(
        "UPDATE projects SET ops_endpoint_id = $2 WHERE id = $1",
        project_id.get(),
        endpoint_id.get(),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// How many days of history the project shows and keeps: its operator's `retention_days`,
/// within the server's window.
pub async fn window_days(pool: &PgPool, project_id: ProjectId, server_days: u32) -> AppResult<u32> {
    let limits = sqlx::query_scalar!(
        "SELECT limits FROM projects WHERE id = $1",
        project_id.get()
    )
    .fetch_optional(pool)
    .await?;
    Ok(limits.map_or(server_days, |l| {
        crate::core::operator::window_days(&l, server_days)
    }))
}

/// Refuses (not found) a row made before the project's window: what the lists no longer
/// show is not read by id either, before the trim removes it.
pub async fn within_window(
    pool: &PgPool,
    project_id: ProjectId,
    server_days: u32,
    created_at: chrono::DateTime<chrono::Utc>,
) -> AppResult<()> {
    let days = window_days(pool, project_id, server_days).await?;
    if created_at < chrono::Utc::now() - chrono::Duration::days(i64::from(days)) {
        return Err(crate::error::AppError::NotFound);
    }
    Ok(())
}
