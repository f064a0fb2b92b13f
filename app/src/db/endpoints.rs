//! Endpoints: where a project's events go, and the secrets that sign them.

use crate::core::{EndpointId, EventId, ProjectId};
use sqlx::PgPool;

use crate::{
    core::permissions::Access,
    core::{
        ids::new_endpoint_secret,
        sealed::{self, StoredValue},
    },
    error::{AppError, AppResult},
    model::EndpointView,
};

const COLUMNS: &str =
    "id, project_id, url, description, event_types, enabled, disabled_reason, created_at,
    ARRAY(SELECT h->>0 FROM jsonb_array_elements(custom_headers) h) AS header_names, rate_limit,
    client_cert_subject, client_cert_not_after, signature_scheme, public_key, filter,
    destination, destination_settings::text AS destination_settings,
    destination_credentials IS NOT NULL AS credentials_set, listen_name, listen_connected AND listen_seen_at > now() - interval '90 seconds'
      AS listen_connected,
    CASE WHEN destination = 'listen' THEN concat_ws(' · ', listen_name,
      CASE WHEN listen_connected AND listen_seen_at > now() - interval '90 seconds'
           THEN 'connected' ELSE 'waiting' END) END AS listen";

pub struct NewEndpoint<'a> {
    pub url: &'a str,
    pub event_types: &'a [String],
    pub description: &'a str,
    /// Attempts per second (None: unlimited).
    pub rate_limit: Option<i32>,
}

/// Custom header names of an endpoint (values are never read back out).
pub async fn custom_header_names(
    pool: &PgPool,
    access: &Access,
    id: EndpointId,
) -> AppResult<Vec<String>> {
    let headers = sqlx::query_scalar!(
        r#"SELECT custom_headers AS "headers: sqlx::types::Json<Vec<(String, StoredValue)>>"
             FROM endpoints WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL"#,
        id.get(),
        access.project_id.get(),
    )
    .fetch_optional(pool)
    .await?
    .ok_or(AppError::NotFound)?;
    Ok(headers.0.into_iter().map(|(n, _)| n).collect())
}

pub async fn set_custom_headers(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
    headers: &[(String, String)],
) -> AppResult<()> {
    super::found(
        sqlx::query!(
            "UPDATE endpoints SET custom_headers = $3, updated_at = now() WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
            id.get(),
            access.project_id.get(),
            sqlx::types::Json(sealed::seal_headers(
                sealed::HEADER_VALUE.of(access.project_id, id),
                headers,
            )) as _,
        )
        .execute(db)
        .await?
        .rows_affected(),
    )
}

/// Makes an endpoint publish to a broker: its type, settings and (sealed) credentials;
/// credentials left out are kept. Its type never changes after creation (the caller
/// checks).
pub async fn set_destination(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
    destination: &crate::core::destination::Destination,
) -> AppResult<()> {
    let settings = &destination.settings;
    let credentials = destination.credentials.as_ref().map(|c| {
        let slot = sealed::DESTINATION_CREDENTIALS.of(access.project_id, id);
        sealed::seal(slot, &serde_json::to_string(c).unwrap_or_default())
    });
    super::found(
        sqlx::query!(
            "UPDATE endpoints SET destination = $3, destination_settings = $4,
                    destination_credentials = coalesce($5, destination_credentials), url = $6,
                    updated_at = now()
              WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
            id.get(),
            access.project_id.get(),
            settings.kind(),
            sqlx::types::Json(settings) as _,
            credentials,
            settings.target(),
        )
        .execute(db)
        .await?
        .rows_affected(),
    )
}

/// Sets the endpoint's filter (checked by the caller) or, with None, removes it.
pub async fn set_filter(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
    filter: Option<&str>,
) -> AppResult<()> {
    super::found(
        sqlx::query!(
            "UPDATE endpoints SET filter = $3, updated_at = now()
              WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
            id.get(),
            access.project_id.get(),
            filter,
        )
        .execute(db)
        .await?
        .rows_affected(),
    )
}

/// Sets the endpoint's client certificate (its key sealed), or removes it; the notice of
/// its expiry is due again for a new one.
pub async fn set_client_cert(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
    cert: Option<&crate::core::client_cert::ClientCert>,
) -> AppResult<()> {
    super::found(
        sqlx::query!(
            "UPDATE endpoints SET client_cert = $3, client_key = $4, client_cert_subject = $5,
                    client_cert_not_after = $6, client_cert_noticed_for = NULL, updated_at = now()
              WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
            id.get(),
            access.project_id.get(),
            cert.map(|c| c.cert_pem.as_str()),
            cert.map(|c| {
                let slot = sealed::CLIENT_KEY.of(access.project_id, id);
                sealed::seal(slot, &c.key_pem)
            }),
            cert.map(|c| c.subject.as_str()),
            cert.map(|c| c.not_after) as _,
        )
        .execute(db)
        .await?
        .rows_affected(),
    )
}

/// Sets one custom header (replacing one of the same name, in any case) or, without a
/// value, removes it; the other headers and their values are left as they are. Returns
/// the header names now set.
pub async fn edit_custom_header(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
    name: &str,
    value: Option<&str>,
) -> AppResult<Vec<String>> {
    sqlx::query_scalar!(
        r#"UPDATE endpoints SET updated_at = now(), custom_headers =
            COALESCE((SELECT jsonb_agg(h) FROM jsonb_array_elements(custom_headers) h
                      WHERE lower(h->>0) <> lower($3)), '[]'::jsonb)
            || CASE WHEN $4::jsonb IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_array($3, $4::jsonb)) END
         WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL
         RETURNING ARRAY(SELECT h->>0 FROM jsonb_array_elements(custom_headers) h) AS "names!""#,
        id.get(),
        access.project_id.get(),
        name,
        value.map(|v| {
            sqlx::types::Json(sealed::seal_value(
                sealed::HEADER_VALUE.of(access.project_id, id),
                v,
            ))
        }) as _,
    )
    .fetch_optional(db)
    .await?
    .ok_or(AppError::NotFound)
}

/// Endpoints whose automatic attempts have all failed for longer than `after` (none
/// succeeded since the first of those failures) are disabled. Manual retries,
/// redirects and test sends do not count. Returns (id, project, url) of each.
pub async fn auto_disable(
    pool: &PgPool,
    after: std::time::Duration,
) -> AppResult<Vec<(EndpointId, ProjectId, String)>> {
    let disabled = sqlx::query!(
        r#"WITH candidates AS (
            SELECT e.id,
                   (SELECT max(d.created_at) FROM deliveries d
                     WHERE d.endpoint_id = e.id AND d.trigger = 'auto' AND d.status = 'succeeded') AS last_ok
            FROM endpoints e WHERE e.enabled AND e.deleted_at IS NULL
         ), failing AS (
            SELECT c.id, (SELECT min(d.created_at) FROM deliveries d
                           WHERE d.endpoint_id = c.id AND d.trigger = 'auto' AND d.status IN ('failed', 'dead_letter')
                             -- An erasure's dead letters say nothing about the endpoint.
                             AND d.error_kind IS DISTINCT FROM 'erased'
                             AND d.created_at > coalesce(c.last_ok, '-infinity')) AS since
            FROM candidates c
         )
         UPDATE endpoints e SET enabled = false, updated_at = now(),
                disabled_reason = 'auto: every attempt failed since ' || to_char(f.since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC'
         FROM failing f
         WHERE e.id = f.id AND f.since < now() - $1::interval
         RETURNING e.id AS "id: EndpointId", e.project_id AS "project_id: ProjectId", e.url"#,
        chrono::Duration::from_std(after).unwrap_or(chrono::Duration::days(5)) as _,
    )
    .fetch_all(pool)
    .await?;
    Ok(disabled
        .into_iter()
        .map(|r| (r.id, r.project_id, r.url))
        .collect())
}

/// Returns the endpoint and its secret (shown to the creator).
pub async fn create(
    conn: &mut sqlx::PgConnection,
    access: &Access,
    new: NewEndpoint<'_>,
) -> AppResult<(EndpointView, String)> {
    let secret = new_endpoint_secret();
    // The id first: the secret is sealed bound to it.
    let id = sqlx::query_scalar!(
        r#"SELECT nextval(pg_get_serial_sequence('endpoints', 'id')) AS "id!: EndpointId""#
    )
    .fetch_one(&mut *conn)
    .await?;
    let ep = sqlx::query_as::<_, EndpointView>(&format!(
        "INSERT INTO endpoints (id, project_id, url, event_types, description, secret, rate_limit)
         OVERRIDING SYSTEM VALUE VALUES ($7, $1, $2, $3, $4, $5, $6) RETURNING {COLUMNS}"
    ))
    .bind(access.project_id)
    .bind(new.url)
    .bind(new.event_types)
    .bind(new.description)
    .bind(sealed::seal(
        sealed::ENDPOINT_SECRET.of(access.project_id, id),
        &secret,
    ))
    .bind(new.rate_limit)
    .bind(id)
    .fetch_one(&mut *conn)
    .await?;
    Ok((ep, secret))
}

pub async fn list(pool: &PgPool, access: &Access) -> AppResult<Vec<EndpointView>> {
    Ok(sqlx::query_as::<_, EndpointView>(&format!(
        "SELECT {COLUMNS} FROM endpoints WHERE project_id = $1 AND deleted_at IS NULL ORDER BY id"
    ))
    .bind(access.project_id)
    .fetch_all(pool)
    .await?)
}

pub async fn get(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
) -> AppResult<EndpointView> {
    sqlx::query_as::<_, EndpointView>(&format!(
        "SELECT {COLUMNS} FROM endpoints WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL"
    ))
    .bind(id)
    .bind(access.project_id)
    .fetch_optional(db)
    .await?
    .ok_or(AppError::NotFound)
}

pub struct EndpointPatch {
    pub url: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
    /// `Some(None)` lifts the limit; `None` leaves it as it is.
    pub rate_limit: Option<Option<i32>>,
}

pub async fn update(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
    patch: EndpointPatch,
) -> AppResult<EndpointView> {
    sqlx::query_as::<_, EndpointView>(&format!(
        "UPDATE endpoints SET
            url = coalesce($3, url),
            event_types = coalesce($4, event_types),
            description = coalesce($5, description),
            enabled = coalesce($6, enabled),
            disabled_reason = CASE WHEN coalesce($6, enabled) THEN NULL ELSE disabled_reason END,
            rate_limit = CASE WHEN $7 THEN $8 ELSE rate_limit END,
            updated_at = now()
         WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL RETURNING {COLUMNS}"
    ))
    .bind(id)
    .bind(access.project_id)
    .bind(patch.url)
    .bind(patch.event_types)
    .bind(patch.description)
    .bind(patch.enabled)
    .bind(patch.rate_limit.is_some())
    .bind(patch.rate_limit.flatten())
    .fetch_optional(db)
    .await?
    .ok_or(AppError::NotFound)
}

/// Soft-deletes the endpoint; its queued attempts become dead letters at once. Two
/// statements: run it inside the caller's transaction.
pub async fn delete(tx: &mut sqlx::PgConnection, access: &Access, id: EndpointId) -> AppResult<()> {
    let found = sqlx::query!(
        "UPDATE endpoints SET deleted_at = now(), enabled = false
         WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
        id.get(),
        access.project_id.get(),
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if found == 0 {
        return Err(AppError::NotFound);
    }
    // Out of the queue and into the log, finished.
    sqlx::query!(
        "WITH gone AS (
            DELETE FROM delivery_queue WHERE endpoint_id = $1 AND status = 'pending' RETURNING *)
         INSERT INTO delivery_log (id, created_at, project_id, event_id, event_type, endpoint_id,
                target_url, attempt, trigger, triggered_by, status, scheduled_at, finished_at,
                chain_started_at, request_id, error_kind, error, ordering_key, lane_seq)
         SELECT id, created_at, project_id, event_id, event_type, endpoint_id, target_url,
                attempt, trigger, triggered_by, 'dead_letter', scheduled_at, now(),
                chain_started_at, request_id, 'endpoint_deleted', 'endpoint deleted',
                ordering_key, lane_seq
         FROM gone",
        id.get(),
    )
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// The current secret (and the rotated-out one while it is still valid).
pub async fn secrets(
    pool: &PgPool,
    access: &Access,
    id: EndpointId,
) -> AppResult<(String, Option<String>)> {
    let row = sqlx::query!(
        r#"SELECT secret, CASE WHEN previous_secret_expires_at > now() THEN previous_secret END AS previous,
                signature_scheme
         FROM endpoints WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL"#,
        id.get(),
        access.project_id.get(),
    )
    .fetch_optional(pool)
    .await?
    .ok_or(AppError::NotFound)?;
    let (secret, previous) = (row.secret, row.previous);
    if row.signature_scheme == crate::core::ed25519::ED25519 {
        return Err(AppError::Conflict(crate::core::ed25519::NO_SECRET.into()));
    }
    let slot = sealed::ENDPOINT_SECRET.of(access.project_id, id);
    let open = |s: &str| sealed::open(slot, s);
    Ok((open(&secret)?, previous.as_deref().map(open).transpose()?))
}

/// A new secret; the old one keeps signing alongside it for 24 hours.
pub async fn rotate_secret(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: EndpointId,
) -> AppResult<String> {
    let secret = new_endpoint_secret();
    let n = sqlx::query!(
        "UPDATE endpoints SET previous_secret = secret, previous_secret_expires_at = now() + interval '24 hours',
            secret = $3, updated_at = now()
         WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
        id.get(),
        access.project_id.get(),
        sealed::seal(sealed::ENDPOINT_SECRET.of(access.project_id, id), &secret),
    )
    .execute(db)
    .await?
    .rows_affected();
    if n == 0 {
        return Err(AppError::NotFound);
    }
    Ok(secret)
}

/// Every endpoint of the project, deleted ones last, as (id, url): the filter's choices.
pub async fn names(pool: &PgPool, project_id: ProjectId) -> AppResult<Vec<(i64, String)>> {
    let rows = sqlx::query!(
        "SELECT id, url FROM endpoints WHERE project_id = $1 ORDER BY deleted_at IS NOT NULL, id",
        project_id.get(),
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.url)).collect())
}

/// The endpoint's filter as it is now, with what it judges of the event: its type,
/// data (JSON text) and subjects. None when either is not the project's.
pub struct FilterNow {
    pub filter: Option<String>,
    pub event_type: String,
    pub data: String,
    pub subjects: Option<Vec<String>>,
}

pub async fn filter_now(
    tx: &mut sqlx::PgConnection,
    project_id: ProjectId,
    endpoint_id: EndpointId,
    event_id: &EventId,
) -> AppResult<Option<FilterNow>> {
    Ok(sqlx::query_as!(
        FilterNow,
        r#"SELECT e.filter, ev.event_type, ev.data::text AS "data!", ev.subjects
           FROM endpoints e, events ev
          WHERE e.id = $1 AND e.project_id = $3 AND ev.event_id = $2 AND ev.project_id = $3"#,
        endpoint_id.get(),
        event_id.as_str(),
        project_id.get(),
    )
    .fetch_optional(tx)
    .await?)
}
