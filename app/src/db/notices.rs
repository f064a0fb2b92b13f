//! Operational notices: `endpoint.disabled`, `endpoint.failing`, `endpoint.recovered`,
//! `endpoint.certificate_expiring` and `delivery.dead_lettered`. Each is found and marked
//! told in one statement, so two servers never tell the same thing twice, and [`emit`]
//! writes the notice, its event and its attempt to the project's operations endpoint in
//! the caller's transaction.

use crate::core::{EndpointId, ProjectId, UserId};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sqlx::{PgConnection, PgPool};

use crate::{core::status::Trigger, error::AppResult};

/// Dead letters named in one `delivery.dead_lettered` notice at most (the count is exact).
pub const FIRST_IDS: usize = 5;

/// Records a notice about `about` (an endpoint) and sends it to the project's operations
/// endpoint unless that is the endpoint the notice is about. It is queued for e-mail to
/// each member who asked for it at a confirmed address.
pub async fn emit(
    conn: &mut PgConnection,
    project_id: ProjectId,
    about: i64,
    kind: &str,
    data: &Value,
) -> AppResult<()> {
    let id = sqlx::query_scalar!(
        "INSERT INTO notices (project_id, endpoint_id, kind, data) VALUES ($1, $2, $3, $4)
         RETURNING id",
        project_id.get(),
        about,
        kind,
        data,
    )
    .fetch_one(&mut *conn)
    .await?;
    super::alert_mails::queue_notice(&mut *conn, project_id, id).await?;
    if let Some((ops_id, ops_url)) =
        super::projects::ops_target(&mut *conn, project_id, about).await?
    {
        super::deliveries::send_single(
            conn,
            project_id,
            (ops_id, &ops_url),
            (kind, &data.to_string()),
            (Trigger::Notice, "posthorn"),
        )
        .await?;
    }
    Ok(())
}

/// Endpoints whose attempts have all failed for their project's `failing_alert_after`:
/// one `endpoint.failing` each, then none until they recover. Returns how many.
pub async fn tell_failing(pool: &PgPool) -> AppResult<usize> {
    let mut tx = pool.begin().await?;
    let failing = sqlx::query!(
        r#"UPDATE endpoints e SET failing_noticed = true
           FROM projects p
          WHERE p.id = e.project_id AND e.failing_since < now() - p.failing_alert_after
            AND NOT e.failing_noticed AND e.enabled AND e.deleted_at IS NULL
         RETURNING e.id, e.project_id, e.url, e.failing_since AS "failing_since!: DateTime<Utc>",
                   extract(epoch FROM p.failing_alert_after)::float8 AS "after!""#,
    )
    .fetch_all(&mut *tx)
    .await?;
    for f in &failing {
        let (id, project_id, url, since, after) =
            (&f.id, &f.project_id, &f.url, &f.failing_since, &f.after);
        let data = json!({
            "endpoint_id": id, "url": url, "failing_since": seconds(since),
            "after_seconds": *after as i64,
        });
        emit(
            &mut tx,
            ProjectId::new(*project_id),
            *id,
            "endpoint.failing",
            &data,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(failing.len())
}

/// Endpoints told failing that have since succeeded: one `endpoint.recovered` each.
pub async fn tell_recovered(pool: &PgPool) -> AppResult<usize> {
    let mut tx = pool.begin().await?;
    let recovered = sqlx::query!(
        "UPDATE endpoints SET failing_noticed = false
          WHERE failing_noticed AND failing_since IS NULL
         RETURNING id, project_id, url",
    )
    .fetch_all(&mut *tx)
    .await?;
    for r in &recovered {
        let (id, project_id, url) = (&r.id, &r.project_id, &r.url);
        let data = json!({ "endpoint_id": id, "url": url });
        emit(
            &mut tx,
            ProjectId::new(*project_id),
            *id,
            "endpoint.recovered",
            &data,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(recovered.len())
}

/// Client certificates that expire within `ahead` (14 days): one
/// `endpoint.certificate_expiring` per certificate (a new one is told again).
pub async fn tell_certificates_expiring(
    pool: &PgPool,
    ahead: std::time::Duration,
) -> AppResult<usize> {
    let mut tx = pool.begin().await?;
    let expiring = sqlx::query!(
        r#"UPDATE endpoints SET client_cert_noticed_for = client_cert_not_after
          WHERE client_cert_not_after IS NOT NULL AND deleted_at IS NULL
            AND client_cert_not_after < now() + $1
            AND client_cert_noticed_for IS DISTINCT FROM client_cert_not_after
         RETURNING id, project_id, url, client_cert_subject AS "subject!",
                   client_cert_not_after AS "not_after!: DateTime<Utc>""#,
        chrono::Duration::from_std(ahead).unwrap_or(chrono::Duration::days(14)) as _,
    )
    .fetch_all(&mut *tx)
    .await?;
    for e in &expiring {
        let (id, project_id, url, subject, not_after) =
            (&e.id, &e.project_id, &e.url, &e.subject, &e.not_after);
        let days_left = (*not_after - Utc::now()).num_days().max(0);
        let data = json!({
            "endpoint_id": id, "url": url, "subject": subject, "not_after": seconds(not_after),
            "days_left": days_left,
        });
        emit(
            &mut tx,
            ProjectId::new(*project_id),
            *id,
            "endpoint.certificate_expiring",
            &data,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(expiring.len())
}

/// An endpoint's dead letters, as one notice tells them.
#[derive(sqlx::FromRow)]
struct DeadLetters {
    id: EndpointId,
    project_id: ProjectId,
    url: String,
    count: i64,
    first_ids: Vec<String>,
    since: DateTime<Utc>,
}

/// Dead letters tallied since an endpoint's last `delivery.dead_lettered`, at most one
/// notice per endpoint per `every`: a thousand at once make one notice with their count.
pub async fn tell_dead_letters(pool: &PgPool, every: std::time::Duration) -> AppResult<usize> {
    let mut tx = pool.begin().await?;
    let told = sqlx::query_as!(
        DeadLetters,
        r#"WITH due AS (
            DELETE FROM dead_letter_tally t USING endpoints e
             WHERE e.id = t.endpoint_id
               AND (e.dead_letters_noticed_at IS NULL OR e.dead_letters_noticed_at <= now() - $1::interval)
            RETURNING t.*
         )
         UPDATE endpoints e SET dead_letters_noticed_at = now()
           FROM due WHERE e.id = due.endpoint_id
         RETURNING e.id, e.project_id, e.url, due.count AS "count!", due.first_ids AS "first_ids!",
                   due.since AS "since!: DateTime<Utc>""#,
        chrono::Duration::from_std(every).unwrap_or(chrono::Duration::minutes(1)) as _,
    )
    .fetch_all(&mut *tx)
    .await?;
    for t in &told {
        let data = json!({
            "endpoint_id": t.id, "url": t.url, "count": t.count, "since": seconds(&t.since),
            "first_event_ids": t.first_ids,
        });
        emit(
            &mut tx,
            t.project_id,
            t.id.get(),
            "delivery.dead_lettered",
            &data,
        )
        .await?;
    }
    tx.commit().await?;
    Ok(told.len())
}

/// Whether the member gets alerts by e-mail, and setting it.
pub async fn email_alerts(
    db: impl sqlx::PgExecutor<'_>,
    project_id: ProjectId,
    user_id: UserId,
) -> AppResult<bool> {
    Ok(sqlx::query_scalar!(
        "SELECT email_alerts FROM memberships WHERE project_id = $1 AND user_id = $2",
        project_id.get(),
        user_id.get(),
    )
    .fetch_optional(db)
    .await?
    .unwrap_or(false))
}

pub async fn set_email_alerts(
    db: impl sqlx::PgExecutor<'_>,
    project_id: ProjectId,
    user_id: UserId,
    on: bool,
) -> AppResult<bool> {
    Ok(sqlx::query!(
        "UPDATE memberships SET email_alerts = $3 WHERE project_id = $1 AND user_id = $2",
        project_id.get(),
        user_id.get(),
        on,
    )
    .execute(db)
    .await?
    .rows_affected()
        > 0)
}

/// The project's threshold for `endpoint.failing`, in seconds, and setting it.
pub async fn failing_after(pool: &PgPool, project_id: ProjectId) -> AppResult<i64> {
    Ok(sqlx::query_scalar!(
        r#"SELECT extract(epoch FROM failing_alert_after)::bigint AS "seconds!"
             FROM projects WHERE id = $1"#,
        project_id.get(),
    )
    .fetch_one(pool)
    .await?)
}

pub async fn set_failing_after(
    db: impl sqlx::PgExecutor<'_>,
    project_id: ProjectId,
    seconds: i64,
) -> AppResult<()> {
    sqlx::query!(
        "UPDATE projects SET failing_alert_after = make_interval(secs => $2) WHERE id = $1",
        project_id.get(),
        seconds as f64,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The project's latest notices, newest first: (kind, data, when).
pub async fn recent(
    pool: &PgPool,
    project_id: ProjectId,
    limit: i64,
) -> AppResult<Vec<(String, sqlx::types::Json<Value>, DateTime<Utc>)>> {
    Ok(sqlx::query!(
        r#"SELECT kind, data AS "data: sqlx::types::Json<Value>", created_at AS "created_at: DateTime<Utc>" FROM notices
            WHERE project_id = $1 ORDER BY created_at DESC LIMIT $2"#,
        project_id.get(),
        limit,
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.kind, r.data, r.created_at))
    .collect())
}

/// A notice's times to the second, as the documented examples show them
/// (`2026-11-30T09:12:04Z`), not to the microsecond.
fn seconds(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
