//! Memberships: who belongs to which project, and in what role (`owner`, `member`).

use sqlx::{PgConnection, PgPool};

use crate::{error::AppResult, model::Member};

pub async fn add(
    conn: &mut PgConnection,
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
    .execute(conn)
    .await?;
    Ok(())
}

/// The user's role in the project (`owner`, `member`), or None for a non-member.
pub async fn role(pool: &PgPool, project_id: i64, user_id: i64) -> AppResult<Option<String>> {
    Ok(sqlx::query_scalar::<_, String>(
        "SELECT role FROM memberships WHERE project_id = $1 AND user_id = $2",
    )
    .bind(project_id)
    .bind(user_id)
    .fetch_optional(pool)
    .await?)
}

/// The project's members, oldest first.
pub async fn list(pool: &PgPool, project_id: i64) -> AppResult<Vec<Member>> {
    Ok(sqlx::query_as::<_, Member>(
        "SELECT u.email, m.role, m.created_at AS since FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.project_id = $1 ORDER BY m.created_at",
    )
    .bind(project_id)
    .fetch_all(pool)
    .await?)
}

/// One member, as [`lock_all`] returns them.
pub struct Locked {
    pub user_id: i64,
    /// Lower-cased.
    pub email: String,
    pub role: String,
}

/// Every membership of the project, locked until the transaction ends, so that two
/// changes to the team (two removals) cannot both pass a check made on it.
pub async fn lock_all(conn: &mut PgConnection, project_id: i64) -> AppResult<Vec<Locked>> {
    let rows: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT m.user_id, lower(u.email), m.role FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.project_id = $1 FOR UPDATE OF m",
    )
    .bind(project_id)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(user_id, email, role)| Locked {
            user_id,
            email,
            role,
        })
        .collect())
}

pub async fn remove(conn: &mut PgConnection, project_id: i64, user_id: i64) -> AppResult<()> {
    sqlx::query("DELETE FROM memberships WHERE project_id = $1 AND user_id = $2")
        .bind(project_id)
        .bind(user_id)
        .execute(conn)
        .await?;
    Ok(())
}
