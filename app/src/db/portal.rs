//! Portal links and sessions. A link is single-use and short-lived; redeeming it makes a
//! session for one project and one portal user with an absolute end. Only hashes of
//! their tokens are stored.

use crate::core::ProjectId;
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::{
    core::{ids::new_token, operator::PortalRole},
    error::{AppError, AppResult},
    model::Brand,
};

use super::api_keys::hash_key;

/// Who the operator signs in: its own id for the user, and how to show them.
#[derive(Clone, Debug)]
pub struct PortalUser {
    pub id: String,
    pub email: Option<String>,
    pub name: Option<String>,
}

/// A signed-in portal browser, with what its pages need of the project.
#[derive(Clone, Debug)]
pub struct PortalSession {
    pub project_id: ProjectId,
    pub user: PortalUser,
    pub role: PortalRole,
    pub expires_at: DateTime<Utc>,
    pub frame_ancestors: Vec<String>,
    pub brand: Brand,
}

impl PortalSession {
    /// How audit entries and manual actions name this user.
    pub fn actor(&self) -> String {
        format!("portal:{}", self.user.id)
    }
}

/// Makes a link for a live project; returns its token (the URL's last part, shown once)
/// and when it expires.
pub async fn create_link(
    pool: &PgPool,
    project_id: ProjectId,
    user: &PortalUser,
    role: PortalRole,
    lifetime_secs: i64,
    created_by: &str,
) -> AppResult<(String, DateTime<Utc>)> {
    let token = new_token();
    let expires_at = sqlx::query_scalar!(
        r#"INSERT INTO portal_links (token_hash, project_id, user_uid, email, name, role, created_by, expires_at)
         SELECT $1, id, $3, $4, $5, $6, $7, now() + make_interval(secs => $8)
           FROM projects WHERE id = $2 AND deleted_at IS NULL
         RETURNING expires_at AS "expires_at!: DateTime<Utc>""#,
        hash_key(&token),
        project_id.get(),
        &user.id,
        user.email.as_deref(),
        user.name.as_deref(),
        role.as_str(),
        created_by,
        lifetime_secs as f64,
    )
    .fetch_optional(pool)
    .await?;
    Ok((token, expires_at.ok_or(AppError::NotFound)?))
}

/// Uses a link: once, before it expires, for a project that still exists. Returns the
/// new session's token, or `None` for a used, expired, unknown or forged link (which
/// makes nothing).
pub async fn redeem(pool: &PgPool, token: &str, session_secs: u64) -> AppResult<Option<String>> {
    if token.len() > 100 {
        return Ok(None);
    }
    let session = new_token();
    let made = sqlx::query_scalar!(
        "WITH used AS (
            UPDATE portal_links l SET used_at = now()
              FROM projects p
             WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now()
               AND p.id = l.project_id AND p.deleted_at IS NULL
            RETURNING l.project_id, l.user_uid, l.email, l.name, l.role)
         INSERT INTO portal_sessions (token_hash, project_id, user_uid, email, name, role, expires_at)
         SELECT $2, project_id, user_uid, email, name, role, now() + make_interval(secs => $3)
           FROM used
         RETURNING project_id",
        hash_key(token),
        hash_key(&session),
        session_secs as f64,
    )
    .fetch_optional(pool)
    .await?;
    Ok(made.map(|_| session))
}

/// The live session a cookie names, if any.
pub async fn session(pool: &PgPool, token: &str) -> AppResult<Option<PortalSession>> {
    if token.len() > 100 {
        return Ok(None);
    }
    let row = sqlx::query!(
        r#"SELECT s.project_id AS "project_id: ProjectId", s.user_uid, s.email, s.name, s.role,
                s.expires_at AS "expires_at: DateTime<Utc>", p.frame_ancestors, p.brand AS "brand: sqlx::types::Json<Brand>"
           FROM portal_sessions s JOIN projects p ON p.id = s.project_id AND p.deleted_at IS NULL
          WHERE s.token_hash = $1 AND s.expires_at > now()"#,
        hash_key(token),
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.and_then(|r| {
        Some(PortalSession {
            project_id: r.project_id,
            user: PortalUser {
                id: r.user_uid,
                email: r.email,
                name: r.name,
            },
            role: PortalRole::parse(&r.role)?,
            expires_at: r.expires_at,
            frame_ancestors: r.frame_ancestors,
            brand: r.brand.0,
        })
    }))
}

/// Ends the session a cookie names (signing out); whether there was one.
pub async fn end_session(pool: &PgPool, token: &str) -> AppResult<bool> {
    if token.len() > 100 {
        return Ok(false);
    }
    let ended = sqlx::query!(
        "DELETE FROM portal_sessions WHERE token_hash = $1",
        hash_key(token)
    )
    .execute(pool)
    .await?
    .rows_affected();
    Ok(ended > 0)
}

/// Forgets links and sessions that can no longer be used.
pub async fn sweep(pool: &PgPool) -> AppResult<u64> {
    let links =
        sqlx::query!("DELETE FROM portal_links WHERE expires_at < now() - interval '1 day'")
            .execute(pool)
            .await?
            .rows_affected();
    let sessions = sqlx::query!("DELETE FROM portal_sessions WHERE expires_at < now()")
        .execute(pool)
        .await?
        .rows_affected();
    Ok(links + sessions)
}
