//! Invitations: one-time links to join a project, stored as the token's SHA-256 hash,
//! usable once within their lifetime.

use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};

use crate::{core::permissions::Access, error::AppResult};

fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Stores an invitation of `email` as a member, valid for 7 days.
pub async fn create(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    token: &str,
    email: &str,
) -> AppResult<()> {
    sqlx::query!(
        "INSERT INTO invitations (token_hash, project_id, email, role, created_by, expires_at)
         VALUES ($1, $2, $3, 'member', $4, now() + interval '7 days')",
        hash_token(token),
        access.project_id.get(),
        email,
        access.user_id.get(),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// What an open (unused, unexpired) invitation offers.
#[derive(sqlx::FromRow)]
pub struct OpenInvitation {
    pub project: String,
    pub email: String,
    /// The invited address already has an account.
    pub has_account: bool,
}

pub async fn find_open(pool: &PgPool, token: &str) -> AppResult<Option<OpenInvitation>> {
    Ok(sqlx::query_as!(
        OpenInvitation,
        r#"SELECT p.name AS project, i.email,
                EXISTS (SELECT 1 FROM users u WHERE lower(u.email) = i.email) AS "has_account!"
         FROM invitations i JOIN projects p ON p.id = i.project_id
         WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > now()"#,
        hash_token(token),
    )
    .fetch_optional(pool)
    .await?)
}

/// Marks an open invitation used; returns its project and role, or None when it was
/// unknown, used or expired (a second use of the same link finds nothing).
pub async fn take(conn: &mut PgConnection, token: &str) -> AppResult<Option<(i64, String)>> {
    Ok(sqlx::query!(
        "UPDATE invitations SET used_at = now()
         WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
         RETURNING project_id, role",
        hash_token(token),
    )
    .fetch_optional(conn)
    .await?
    .map(|r| (r.project_id, r.role)))
}
