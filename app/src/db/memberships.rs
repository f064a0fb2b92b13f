//! Memberships: who belongs to which project, and in what role (`owner`, `member`).

use crate::core::{ProjectId, UserId};
use sqlx::{PgConnection, PgPool};

use crate::{error::AppResult, model::Member};

pub async fn add(
    conn: &mut PgConnection,
    project_id: ProjectId,
    user_id: UserId,
    role: &str,
) -> AppResult<()> {
    sqlx::query!(
        "INSERT INTO memberships (project_id, user_id, role) VALUES ($1, $2, $3)
         ON CONFLICT (project_id, user_id) DO NOTHING",
        project_id.get(),
        user_id.get(),
        role,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The user's role in the project (`owner`, `member`), or None for a non-member.
pub async fn role(
    pool: &PgPool,
    project_id: ProjectId,
    user_id: UserId,
) -> AppResult<Option<String>> {
    Ok(sqlx::query_scalar!(
        "SELECT role FROM memberships WHERE project_id = $1 AND user_id = $2",
        project_id.get(),
        user_id.get(),
    )
    .fetch_optional(pool)
    .await?)
}

/// The project's members, oldest first.
pub async fn list(pool: &PgPool, project_id: ProjectId) -> AppResult<Vec<Member>> {
    Ok(sqlx::query_as!(
        Member,
        r#"SELECT u.email, m.role, m.created_at AS "since: chrono::DateTime<chrono::Utc>" FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.project_id = $1 ORDER BY m.created_at"#,
        project_id.get(),
    )
    .fetch_all(pool)
    .await?)
}

/// One member, as [`lock_all`] returns them.
pub struct Locked {
    pub user_id: UserId,
    /// Lower-cased.
    pub email: String,
    pub role: String,
}

/// Every membership of the project, locked until the transaction ends, so that two
/// changes to the team (two removals) cannot both pass a check made on it.
pub async fn lock_all(conn: &mut PgConnection, project_id: ProjectId) -> AppResult<Vec<Locked>> {
    Ok(sqlx::query_as!(
        Locked,
        r#"SELECT m.user_id, lower(u.email) AS "email!", m.role
             FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.project_id = $1 FOR UPDATE OF m"#,
        project_id.get(),
    )
    .fetch_all(conn)
    .await?)
}

pub async fn remove(
    conn: &mut PgConnection,
    project_id: ProjectId,
    user_id: UserId,
) -> AppResult<()> {
    sqlx::query!(
        "DELETE FROM memberships WHERE project_id = $1 AND user_id = $2",
        project_id.get(),
        user_id.get(),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Sets a member's role (`owner` or `member`, checked by the caller).
pub async fn set_role(
    conn: &mut PgConnection,
    project_id: ProjectId,
    user_id: UserId,
    role: &str,
) -> AppResult<()> {
    sqlx::query!(
        "UPDATE memberships SET role = $3 WHERE project_id = $1 AND user_id = $2",
        project_id.get(),
        user_id.get(),
        role,
    )
    .execute(conn)
    .await?;
    Ok(())
}
