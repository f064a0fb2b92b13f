//! Alert addresses: the members who asked for alert e-mail, and whether whoever reads
//! the address confirmed it through the single-use link mailed to it (stored as the
//! token's SHA-256 hash, valid for a day).

use crate::core::{ProjectId, UserId};
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};

use crate::{core::alert_mail::CONFIRMATION_LINK_HOURS, error::AppResult};

fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Records that the member asked for alert e-mail at `email`; true when the address is
/// new for this member and project (so it needs confirming).
pub async fn add(
    conn: &mut PgConnection,
    project_id: ProjectId,
    user_id: UserId,
    email: &str,
) -> AppResult<bool> {
    Ok(sqlx::query!(
        "INSERT INTO alert_recipients (project_id, user_id, email) VALUES ($1, $2, $3)
         ON CONFLICT (project_id, user_id) DO NOTHING",
        project_id.get(),
        user_id.get(),
        email,
    )
    .execute(conn)
    .await?
    .rows_affected()
        == 1)
}

/// The member's alert address and whether it is confirmed, if they asked for one.
pub async fn of_member(
    db: impl sqlx::PgExecutor<'_>,
    project_id: ProjectId,
    user_id: UserId,
) -> AppResult<Option<(String, bool)>> {
    Ok(sqlx::query!(
        r#"SELECT email, confirmed_at IS NOT NULL AS "confirmed!" FROM alert_recipients
          WHERE project_id = $1 AND user_id = $2"#,
        project_id.get(),
        user_id.get(),
    )
    .fetch_optional(db)
    .await?
    .map(|r| (r.email, r.confirmed)))
}

/// Makes `token` the address's one working link, for [`CONFIRMATION_LINK_HOURS`]; false
/// when there is nothing left to confirm (confirmed meanwhile, or no longer asked for).
pub async fn set_token(
    pool: &PgPool,
    project_id: ProjectId,
    user_id: UserId,
    token: &str,
) -> AppResult<bool> {
    Ok(sqlx::query!(
        "UPDATE alert_recipients
            SET token_hash = $3, token_expires_at = now() + make_interval(hours => $4)
          WHERE project_id = $1 AND user_id = $2 AND confirmed_at IS NULL",
        project_id.get(),
        user_id.get(),
        hash_token(token),
        CONFIRMATION_LINK_HOURS as i32,
    )
    .execute(pool)
    .await?
    .rows_affected()
        == 1)
}

/// What an open confirmation link confirms: the project's name and the address.
pub async fn find_open(pool: &PgPool, token: &str) -> AppResult<Option<(String, String)>> {
    Ok(sqlx::query!(
        "SELECT p.name, r.email FROM alert_recipients r JOIN projects p ON p.id = r.project_id
          WHERE r.token_hash = $1 AND r.token_expires_at > now() AND r.confirmed_at IS NULL",
        hash_token(token),
    )
    .fetch_optional(pool)
    .await?
    .map(|r| (r.name, r.email)))
}

/// Confirms the address behind an open link and uses the link up: (project, user,
/// address), or None when the link is unknown, used or expired.
pub async fn confirm(
    conn: &mut PgConnection,
    token: &str,
) -> AppResult<Option<(i64, i64, String)>> {
    Ok(sqlx::query!(
        "UPDATE alert_recipients
            SET confirmed_at = now(), token_hash = NULL, token_expires_at = NULL
          WHERE token_hash = $1 AND token_expires_at > now() AND confirmed_at IS NULL
         RETURNING project_id, user_id, email",
        hash_token(token),
    )
    .fetch_optional(conn)
    .await?
    .map(|r| (r.project_id, r.user_id, r.email)))
}

/// One row of the panel's list of alert addresses.
#[derive(Debug, sqlx::FromRow)]
pub struct AddressState {
    pub email: String,
    pub confirmed: bool,
    /// When the latest mail to it ended failed, when and what the server said.
    pub failed_at: Option<DateTime<Utc>>,
    pub reply: Option<String>,
}

/// The project's alert addresses (of members who still ask for e-mail), by address.
pub async fn list(pool: &PgPool, project_id: ProjectId) -> AppResult<Vec<AddressState>> {
    Ok(sqlx::query_as!(
        AddressState,
        r#"SELECT r.email, r.confirmed_at IS NOT NULL AS "confirmed!", f.finished_at AS "failed_at?: DateTime<Utc>",
                  f.reply AS "reply?"
           FROM alert_recipients r
           JOIN memberships m USING (project_id, user_id)
           LEFT JOIN LATERAL (
                SELECT status, finished_at, reply FROM alert_mails a
                 WHERE a.project_id = r.project_id AND a.user_id = r.user_id
                   AND a.status IN ('sent', 'failed')
                 ORDER BY a.finished_at DESC LIMIT 1) f ON f.status = 'failed'
          WHERE r.project_id = $1 AND m.email_alerts
          ORDER BY r.email"#,
        project_id.get(),
    )
    .fetch_all(pool)
    .await?)
}
