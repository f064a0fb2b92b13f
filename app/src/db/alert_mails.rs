//! The alert e-mail outbox: one row per mail to one address (a notice, or an address
//! confirmation), each with its own tries and fate, so one address's refusal never holds
//! back or repeats another's mail. Rows are claimed for a while rather than locked: no
//! transaction stays open across an SMTP conversation.

use crate::core::{ProjectId, UserId};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{PgConnection, PgPool};

use crate::error::AppResult;

/// Queues a notice for every member of its project who asked for alert e-mail and
/// confirmed the address; in the transaction that records the notice.
pub async fn queue_notice(
    conn: &mut PgConnection,
    project_id: ProjectId,
    notice_id: i64,
) -> AppResult<()> {
    sqlx::query!(
        "INSERT INTO alert_mails (project_id, user_id, email, notice_id)
         SELECT r.project_id, r.user_id, r.email, $2
           FROM alert_recipients r JOIN memberships m USING (project_id, user_id)
          WHERE r.project_id = $1 AND m.email_alerts AND r.confirmed_at IS NOT NULL",
        project_id.get(),
        notice_id,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Holds back other requests for confirmations to this address or for this project until
/// the caller's transaction ends, so two at once cannot both pass the daily limits.
pub async fn lock_confirmations(
    conn: &mut PgConnection,
    project_id: ProjectId,
    email: &str,
) -> AppResult<()> {
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtext('alert-confirm:' || lower($2))) AS address_lock,
                pg_advisory_xact_lock(hashtext('alert-confirm-project:' || $1::text)) AS project_lock",
        project_id as _,
        email,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Confirmations asked for in the last day: (to this address from any project, by this
/// project to any address).
pub async fn confirmations_today(
    conn: &mut PgConnection,
    project_id: ProjectId,
    email: &str,
) -> AppResult<(i64, i64)> {
    let today = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM alert_mails WHERE notice_id IS NULL
                   AND lower(email) = lower($2) AND created_at > now() - interval '1 day') AS "to_address!",
                (SELECT count(*) FROM alert_mails WHERE notice_id IS NULL
                   AND project_id = $1 AND created_at > now() - interval '1 day') AS "by_project!""#,
        project_id.get(),
        email,
    )
    .fetch_one(conn)
    .await?;
    Ok((today.to_address, today.by_project))
}

/// Queues a confirmation mail to the member's address.
pub async fn queue_confirmation(
    conn: &mut PgConnection,
    project_id: ProjectId,
    user_id: UserId,
    email: &str,
) -> AppResult<()> {
    sqlx::query!(
        "INSERT INTO alert_mails (project_id, user_id, email) VALUES ($1, $2, $3)",
        project_id.get(),
        user_id.get(),
        email,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Forgets waiting mail nobody wants any more: its member left or turned e-mail off, a
/// notice's address is not (or no longer) confirmed, a confirmation's already is.
pub async fn drop_unwanted(pool: &PgPool) -> AppResult<u64> {
    Ok(sqlx::query!(
        "DELETE FROM alert_mails a
          WHERE a.status = 'waiting' AND (a.claimed_until IS NULL OR a.claimed_until < now())
            AND NOT EXISTS (
                SELECT 1 FROM alert_recipients r JOIN memberships m USING (project_id, user_id)
                 WHERE r.project_id = a.project_id AND r.user_id = a.user_id AND m.email_alerts
                   AND (r.confirmed_at IS NULL) = (a.notice_id IS NULL))",
    )
    .execute(pool)
    .await?
    .rows_affected())
}

/// A mail claimed for sending.
#[derive(Debug, sqlx::FromRow)]
pub struct Claimed {
    pub id: i64,
    pub project_id: ProjectId,
    pub user_id: UserId,
    pub email: String,
    pub project: String,
    /// This try's number, 1 for the first.
    pub tries: i32,
    /// The notice to tell; None for an address confirmation.
    pub notice_id: Option<i64>,
    pub kind: Option<String>,
    pub data: Option<sqlx::types::Json<Value>>,
    pub created_at: Option<DateTime<Utc>>,
}

/// Claims up to `limit` mails that are due, oldest first, for five minutes. A project's
/// notice mails wait (they are not dropped) while it has had `per_hour` of them tried in
/// the last hour; confirmations have daily limits of their own.
pub async fn claim(pool: &PgPool, limit: i64, per_hour: i64) -> AppResult<Vec<Claimed>> {
    let mut claimed = sqlx::query_as!(
        Claimed,
        r#"WITH due AS (
            SELECT id, project_id, notice_id,
                   row_number() OVER (PARTITION BY project_id, notice_id IS NULL ORDER BY id) AS n
              FROM alert_mails
             WHERE status = 'waiting' AND next_at <= now()
               AND (claimed_until IS NULL OR claimed_until < now())
         ), used AS (
            SELECT project_id, count(*) AS n FROM alert_mails
             WHERE notice_id IS NOT NULL AND tried_at > now() - interval '1 hour'
               AND project_id IN (SELECT project_id FROM due)
             GROUP BY project_id
         ), picked AS (
            SELECT due.id, due.project_id, due.notice_id FROM due LEFT JOIN used USING (project_id)
             WHERE due.notice_id IS NULL OR due.n + coalesce(used.n, 0) <= $2
             ORDER BY due.id LIMIT $1
         )
         UPDATE alert_mails a
            SET claimed_until = now() + interval '5 minutes', tries = a.tries + 1, tried_at = now()
           FROM picked JOIN projects p ON p.id = picked.project_id
                LEFT JOIN notices n ON n.id = picked.notice_id
          WHERE a.id = picked.id AND a.status = 'waiting'
            AND (a.claimed_until IS NULL OR a.claimed_until < now())
         RETURNING a.id AS "id!", a.project_id AS "project_id!", a.user_id AS "user_id!",
                   a.email AS "email!", p.name AS "project!", a.tries AS "tries!",
                   a.notice_id AS "notice_id?", n.kind AS "kind?",
                   n.data AS "data?: sqlx::types::Json<Value>", n.created_at AS "created_at?: DateTime<Utc>""#,
        limit,
        per_hour,
    )
    .fetch_all(pool)
    .await?;
    claimed.sort_by_key(|m| m.id);
    Ok(claimed)
}

/// The mail went out: it is never sent again.
pub async fn record_sent(pool: &PgPool, id: i64) -> AppResult<()> {
    sqlx::query!(
        "UPDATE alert_mails SET status = 'sent', finished_at = now(), claimed_until = NULL
          WHERE id = $1",
        id,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// The mail failed for good (refused, or out of tries), with the server's last answer.
pub async fn record_failed(pool: &PgPool, id: i64, reply: &str) -> AppResult<()> {
    sqlx::query!(
        "UPDATE alert_mails SET status = 'failed', finished_at = now(), claimed_until = NULL,
                reply = $2
          WHERE id = $1",
        id,
        reply,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// The mail is tried again after `delay`.
pub async fn record_later(
    pool: &PgPool,
    id: i64,
    reply: &str,
    delay: std::time::Duration,
) -> AppResult<()> {
    sqlx::query!(
        "UPDATE alert_mails SET next_at = now() + make_interval(secs => $3), claimed_until = NULL,
                reply = $2
          WHERE id = $1",
        id,
        reply,
        delay.as_secs_f64(),
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Gives back claims without using up their tries, for the next round.
pub async fn release(pool: &PgPool, ids: &[i64]) -> AppResult<()> {
    sqlx::query!(
        "UPDATE alert_mails SET claimed_until = NULL, tries = tries - 1
          WHERE id = ANY($1) AND status = 'waiting'",
        ids,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Drops a claimed mail that has nothing left to say (an address confirmed meanwhile).
pub async fn forget(pool: &PgPool, id: i64) -> AppResult<()> {
    sqlx::query!(
        "DELETE FROM alert_mails WHERE id = $1 AND status = 'waiting'",
        id,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Deletes the record of mail that ended more than `days` ago (past every daily limit).
pub async fn purge_finished(pool: &PgPool, days: i32) -> AppResult<u64> {
    Ok(sqlx::query!(
        "DELETE FROM alert_mails WHERE status <> 'waiting'
            AND finished_at < now() - make_interval(days => $1)",
        days,
    )
    .execute(pool)
    .await?
    .rows_affected())
}
