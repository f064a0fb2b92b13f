//! Projects and who belongs to them.

use sqlx::PgPool;

use crate::{error::AppResult, model::ProjectRef};

pub async fn create(pool: &PgPool, name: &str, plan: &str, owner_id: i64) -> AppResult<ProjectRef> {
    let mut tx = pool.begin().await?;
    let project = sqlx::query_as::<_, ProjectRef>(
        "INSERT INTO projects (name, plan) VALUES ($1, $2) RETURNING id, name, plan",
    )
    .bind(name)
    .bind(plan)
    .fetch_one(&mut *tx)
    .await?;
    add_member(&mut tx, project.id, owner_id, "owner").await?;
    tx.commit().await?;
    Ok(project)
}

pub async fn add_member(
    tx: &mut sqlx::PgConnection,
    project_id: i64,
    user_id: i64,
    role: &str,
) -> AppResult<()> {
    sqlx::query(
        "INSERT INTO memberships (project_id, user_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (project_id, user_id) DO NOTHING",
    )
    .bind(project_id)
    .bind(user_id)
    .bind(role)
    .execute(tx)
    .await?;
    Ok(())
}

/// The projects a user sees: their memberships, or every project for support staff.
pub async fn visible_to(
    pool: &PgPool,
    user_id: i64,
    is_support: bool,
) -> AppResult<Vec<ProjectRef>> {
    let rows = if is_support {
        sqlx::query_as::<_, ProjectRef>(
            "SELECT id, name, plan FROM projects ORDER BY name, id LIMIT 1000",
        )
        .fetch_all(pool)
        .await?
    } else {
        sqlx::query_as::<_, ProjectRef>(
            "SELECT p.id, p.name, p.plan FROM projects p JOIN memberships m ON m.project_id = p.id
             WHERE m.user_id = $1 ORDER BY p.name, p.id",
        )
        .bind(user_id)
        .fetch_all(pool)
        .await?
    };
    Ok(rows)
}

pub async fn find_by_owner_and_name(
    pool: &PgPool,
    owner_id: i64,
    name: &str,
) -> AppResult<Option<ProjectRef>> {
    Ok(sqlx::query_as::<_, ProjectRef>(
        "SELECT p.id, p.name, p.plan FROM projects p JOIN memberships m ON m.project_id = p.id
         WHERE m.user_id = $1 AND m.role = 'owner' AND p.name = $2 ORDER BY p.id LIMIT 1",
    )
    .bind(owner_id)
    .bind(name)
    .fetch_optional(pool)
    .await?)
}

pub async fn get(pool: &PgPool, id: i64) -> AppResult<Option<ProjectRef>> {
    Ok(
        sqlx::query_as::<_, ProjectRef>("SELECT id, name, plan FROM projects WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

/// The user's role in the project (`owner`, `member`), or None for a non-member.
pub async fn member_role(
    pool: &PgPool,
    project_id: i64,
    user_id: i64,
) -> AppResult<Option<String>> {
    Ok(sqlx::query_scalar::<_, String>(
        "SELECT role FROM memberships WHERE project_id = $1 AND user_id = $2",
    )
    .bind(project_id)
    .bind(user_id)
    .fetch_optional(pool)
    .await?)
}
