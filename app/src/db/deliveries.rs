//! The deliveries table as the dashboard and the API read it, and the manual actions
//! (retry, redirect, test) that enqueue new attempts into it.

use crate::core::{AttemptId, EndpointId, EventId, ProjectId};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};

use super::queue::enqueue::{insert_one, AttemptOf, Lane, NewAttempt};
use crate::{
    core::permissions::Access,
    core::{cursor::Cursor, ids::new_request_id, status::Trigger},
    delivery_filter::DeliveryFilter,
    error::{AppError, AppResult},
    model::DeliveryRow,
};

pub const ROW_COLUMNS: &str = "d.id, d.created_at, d.project_id, d.request_id, d.event_id, d.event_type,
    d.endpoint_id, coalesce(e.url, d.target_url) AS endpoint_url, d.target_url, d.attempt, d.trigger,
    d.triggered_by, d.status, d.scheduled_at, d.started_at, d.finished_at, d.duration_ms,
    d.response_status, d.error_kind, d.error, d.ordering_key, d.waits_for";

/// The WHERE clause of the dashboard's view (everything after `WHERE `), shared by the
/// list and by bulk replay so both act on exactly the rows the user sees.
pub fn push_filters(
    q: &mut QueryBuilder<'_, Postgres>,
    access: &Access,
    filter: &DeliveryFilter,
    retention_days: u32,
    cross_project_search: bool,
) -> AppResult<()> {
    let search = filter.q.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if search.is_some() && cross_project_search {
        q.push("true");
    } else {
        q.push("d.project_id = ").push_bind(access.project_id);
    }
    q.push(" AND d.created_at >= now() - make_interval(days => ")
        .push_bind(retention_days as i32)
        .push(")");
    if let Some(s) = search {
        use crate::core::id_search::{parse, Column, IdSearch};
        let column = |c: Column| match c {
            Column::Event => "d.event_id",
            _ => "d.request_id",
        };
        match parse(s) {
            IdSearch::Exact(c, id) => {
                q.push(format!(" AND {} = ", column(c))).push_bind(id);
            }
            IdSearch::Prefix(Column::Either, lo, hi) => {
                q.push(" AND ((d.event_id >= ")
                    .push_bind(format!("evt_{lo}"))
                    .push(" AND d.event_id < ")
                    .push_bind(format!("evt_{hi}"))
                    .push(") OR (d.request_id >= ")
                    .push_bind(format!("req_{lo}"))
                    .push(" AND d.request_id < ")
                    .push_bind(format!("req_{hi}"))
                    .push("))");
            }
            IdSearch::Prefix(c, lo, hi) => {
                q.push(format!(" AND {} >= ", column(c)))
                    .push_bind(lo)
                    .push(format!(" AND {} < ", column(c)))
                    .push_bind(hi);
            }
            IdSearch::Nothing(_) => {
                q.push(" AND false");
            }
        }
    }
    if let Some(status) = &filter.status {
        q.push(" AND d.status = ").push_bind(*status);
    }
    if let Some(t) = &filter.event_type {
        q.push(" AND d.event_type = ").push_bind(t.clone());
    }
    if let Some(ep) = filter.endpoint {
        q.push(" AND d.endpoint_id = ").push_bind(ep);
    }
    if let Some(key) = &filter.ordering_key {
        q.push(" AND d.ordering_key = ").push_bind(key.clone());
    }
    if let Some(k) = &filter.error_kind {
        q.push(" AND d.error_kind = ").push_bind(*k);
    }
    // Only failed attempts carry an error or a non-2xx code. Saying so lets the planner
    // use the failures index instead of walking the project's whole history.
    let failure_only = filter.error_kind.is_some()
        || matches!(filter.code.as_deref(), Some(c) if !c.is_empty() && c != "none" && !c.starts_with('2'));
    if failure_only && filter.status.is_none() {
        q.push(" AND d.status IN ('failed', 'dead_letter')");
    }
    match filter.code.as_deref() {
        None | Some("") => {}
        Some("none") => {
            q.push(" AND d.response_status IS NULL");
        }
        Some(class) if class.len() == 3 && class.ends_with("xx") => {
            let base = class[..1].parse::<i16>().unwrap_or(0) * 100;
            q.push(" AND d.response_status BETWEEN ")
                .push_bind(base)
                .push(" AND ")
                .push_bind(base + 99);
        }
        Some(exact) => {
            let code: i16 = exact.parse().map_err(|_| {
                AppError::Invalid(format!("code `{exact}` is not a status code or class"))
            })?;
            q.push(" AND d.response_status = ").push_bind(code);
        }
    }
    if let Some(since) = filter.since {
        q.push(" AND d.created_at >= ").push_bind(since);
    }
    if let Some(until) = filter.until {
        q.push(" AND d.created_at < ").push_bind(until);
    }
    if filter.unresolved {
        q.push(
            " AND d.status IN ('failed', 'dead_letter')
              AND NOT EXISTS (SELECT 1 FROM delivery_log s WHERE s.event_id = d.event_id
                               AND s.endpoint_id = d.endpoint_id AND s.status = 'succeeded')
              AND NOT EXISTS (SELECT 1 FROM delivery_queue w WHERE w.event_id = d.event_id
                               AND w.endpoint_id = d.endpoint_id)",
        );
    }
    if let Some(cursor) = filter.cursor.as_deref().filter(|c| !c.is_empty()) {
        let c = Cursor::decode(cursor).map_err(AppError::Invalid)?;
        q.push(" AND (d.created_at, d.id) < (")
            .push_bind(c.created_at)
            .push(", ")
            .push_bind(c.id)
            .push(")");
    }
    Ok(())
}

/// One page of the dashboard list: newest first, `limit` rows after the cursor.
/// Support staff searching by id search every project.
pub async fn list(
    pool: &PgPool,
    access: &Access,
    filter: &DeliveryFilter,
    retention_days: u32,
    limit: i64,
) -> AppResult<Vec<DeliveryRow>> {
    let mut q: QueryBuilder<Postgres> = QueryBuilder::new(format!(
        "SELECT {ROW_COLUMNS} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id WHERE "
    ));
    push_filters(&mut q, access, filter, retention_days, access.is_support)?;
    q.push(" ORDER BY d.created_at DESC, d.id DESC LIMIT ")
        .push_bind(limit);
    Ok(q.build_query_as::<DeliveryRow>().fetch_all(pool).await?)
}

/// How many attempts of the view are newer than `after` (at most 100): the list's
/// "N new" bar. Walks the same index as the list, from the newest end, and stops early.
pub async fn count_newer(
    pool: &PgPool,
    access: &Access,
    filter: &DeliveryFilter,
    retention_days: u32,
    after: (DateTime<Utc>, i64),
) -> AppResult<i64> {
    let filter = DeliveryFilter {
        cursor: None,
        ..filter.clone()
    };
    let mut q: QueryBuilder<Postgres> =
        QueryBuilder::new("SELECT count(*) FROM (SELECT 1 FROM deliveries d WHERE ");
    push_filters(&mut q, access, &filter, retention_days, access.is_support)?;
    // A retry counts once it is due (it is shown, ahead of its time, already).
    q.push(" AND (d.created_at, d.id) > (")
        .push_bind(after.0)
        .push(", ")
        .push_bind(after.1)
        .push(") AND d.created_at <= now() LIMIT 100) newer");
    Ok(q.build_query_scalar::<i64>().fetch_one(pool).await?)
}

/// Finds one attempt the viewer may see: in the access's project, or anywhere for support.
pub async fn get_row(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: AttemptId,
) -> AppResult<DeliveryRow> {
    sqlx::query_as::<_, DeliveryRow>(&format!(
        "SELECT {ROW_COLUMNS} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
         WHERE d.id = $1 AND d.project_id = $2"
    ))
    .bind(id)
    .bind(access.project_id)
    .fetch_optional(db)
    .await?
    .ok_or(AppError::NotFound)
}

/// The current state of several attempts of one project (live updates of a page).
pub async fn get_rows(
    pool: &PgPool,
    access: &Access,
    ids: &[AttemptId],
) -> AppResult<Vec<DeliveryRow>> {
    Ok(sqlx::query_as::<_, DeliveryRow>(&format!(
        "SELECT {ROW_COLUMNS} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
         WHERE d.id = ANY($1) AND d.project_id = $2"
    ))
    .bind(ids)
    .bind(access.project_id)
    .fetch_all(pool)
    .await?)
}

/// The parts of a row that only the expanded view needs.
#[derive(sqlx::FromRow)]
pub struct RowExtras {
    pub request_headers: Option<sqlx::types::Json<Vec<(String, String)>>>,
    pub response_headers: Option<sqlx::types::Json<Vec<(String, String)>>>,
    pub response_body: Option<String>,
    pub event_created_at: Option<DateTime<Utc>>,
    pub data: Option<String>,
    pub erased_at: Option<DateTime<Utc>>,
    pub erasure_id: Option<i64>,
}

pub async fn extras(pool: &PgPool, row: &DeliveryRow) -> AppResult<RowExtras> {
    Ok(sqlx::query_as!(
        RowExtras,
        r#"SELECT d.request_headers AS "request_headers?: sqlx::types::Json<Vec<(String, String)>>",
                d.response_headers AS "response_headers?: sqlx::types::Json<Vec<(String, String)>>",
                d.response_body AS "response_body?",
                ev.created_at AS "event_created_at?: DateTime<Utc>", ev.data::text AS "data?",
                ev.erased_at AS "erased_at?: DateTime<Utc>", ev.erasure_id AS "erasure_id?"
         FROM deliveries d LEFT JOIN events ev ON ev.event_id = d.event_id
         WHERE d.id = $1 AND d.created_at = $2"#,
        row.id.get(),
        row.created_at as _,
    )
    .fetch_one(pool)
    .await?)
}

/// Every attempt of one event to one endpoint, oldest first.
pub async fn attempts_of(
    pool: &PgPool,
    project_id: ProjectId,
    event_id: &EventId,
    endpoint_id: EndpointId,
) -> AppResult<Vec<DeliveryRow>> {
    Ok(sqlx::query_as::<_, DeliveryRow>(&format!(
        "SELECT {ROW_COLUMNS} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
         WHERE d.event_id = $1 AND d.endpoint_id = $2 AND d.project_id = $3
         ORDER BY d.created_at, d.id"
    ))
    .bind(event_id)
    .bind(endpoint_id)
    .bind(project_id)
    .fetch_all(pool)
    .await?)
}

/// A new attempt of `row`'s event to its endpoint's current URL; returns its id. Refused
/// while one of the same event and endpoint is queued or in flight. The advisory lock
/// makes the check-then-insert atomic between two people pressing Retry at once; pass the
/// action's transaction, which holds the lock until it ends.
pub async fn retry(conn: &mut PgConnection, row: &DeliveryRow, by: &str) -> AppResult<i64> {
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtext($1), $2::int)",
        row.event_id.as_str(),
        row.endpoint_id.get() as i32,
    )
    .execute(&mut *conn)
    .await?;
    let before = sqlx::query!(
        r#"SELECT coalesce(bool_or(status IN ('pending', 'in_flight') AND trigger <> 'redirect'), false)
                    AS "busy!",
                coalesce(max(attempt) FILTER (WHERE trigger <> 'redirect'), 0) AS "max_attempt!"
         FROM deliveries WHERE event_id = $1 AND endpoint_id = $2"#,
        &row.event_id,
        row.endpoint_id.get(),
    )
    .fetch_one(&mut *conn)
    .await?;
    let (busy, max_attempt) = (before.busy, before.max_attempt);
    if busy {
        return Err(AppError::Conflict(
            "An attempt of this event to this endpoint is already pending or in flight.".into(),
        ));
    }
    let url: Option<String> = sqlx::query_scalar!(
        "SELECT url FROM endpoints WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
        row.endpoint_id.get(),
        row.project_id.get(),
    )
    .fetch_optional(&mut *conn)
    .await?;
    let url = url.ok_or_else(|| AppError::Conflict("The endpoint has been deleted.".into()))?;
    let mut retry = manual(row, Trigger::ManualRetry, by);
    retry.of.target_url = url;
    retry.attempt = max_attempt + 1;
    Ok((insert_one(conn, retry).await?).get())
}

/// A manual attempt of `row`'s event to its endpoint (its URL and number to be set).
fn manual(row: &DeliveryRow, trigger: Trigger, by: &str) -> NewAttempt {
    NewAttempt {
        of: AttemptOf {
            project_id: row.project_id,
            event_id: row.event_id.clone(),
            event_type: row.event_type.clone(),
            endpoint_id: row.endpoint_id,
            target_url: row.target_url.clone(),
        },
        attempt: 1,
        trigger,
        triggered_by: Some(by.to_string()),
        scheduled_at: None,
        chain_started_at: None,
        request_id: new_request_id(),
        // Shown with the attempt; a manual attempt ignores its key's lane.
        ordering_key: row.ordering_key.clone(),
        lane: Lane::Off,
    }
}

/// `row`'s event, signed the same way, to an inspector bin; one attempt, never retried.
/// Returns its id.
pub async fn redirect(
    conn: &mut PgConnection,
    row: &DeliveryRow,
    bin_url: &str,
    by: &str,
) -> AppResult<i64> {
    let mut redirect = manual(row, Trigger::Redirect, by);
    redirect.of.target_url = bin_url.to_string();
    Ok((insert_one(conn, redirect).await?).get())
}

/// The public API's list: ascending by (created_at, id) up to the commit horizon.
pub async fn page(
    pool: &PgPool,
    project_id: ProjectId,
    after: Option<Cursor>,
    since: Option<DateTime<Utc>>,
    status: Option<crate::core::status::DeliveryStatus>,
    (event_id, ordering_key): (Option<&str>, Option<&str>),
    limit: i64,
) -> AppResult<Vec<DeliveryRow>> {
    let mut conn = pool.acquire().await?;
    let horizon = super::horizon::commit_horizon(&mut conn).await?;
    let (after_ts, after_id) = after
        .map(|c| (c.created_at, c.id))
        .unwrap_or((DateTime::<Utc>::UNIX_EPOCH, 0));
    Ok(sqlx::query_as::<_, DeliveryRow>(&format!(
        "SELECT {ROW_COLUMNS} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id
         WHERE d.project_id = $1 AND (d.created_at, d.id) > ($2, $3) AND d.created_at < $4
           AND ($5::timestamptz IS NULL OR d.created_at >= $5)
           AND ($6::text IS NULL OR d.status = $6)
           AND ($7::text IS NULL OR d.event_id = $7)
           AND ($9::text IS NULL OR d.ordering_key = $9)
         ORDER BY d.created_at, d.id LIMIT $8"
    ))
    .bind(project_id)
    .bind(after_ts)
    .bind(after_id)
    .bind(horizon)
    .bind(since)
    .bind(status)
    .bind(event_id)
    .bind(limit)
    .bind(ordering_key)
    .fetch_all(&mut *conn)
    .await?)
}

/// An event of Posthorn's own (test ping, endpoint alert) to exactly one endpoint: stored
/// as an event (so its payload can be shown and rebuilt) with one attempt: a `test`,
/// never retried and sent even to a disabled endpoint, or a `notice`, retried on the
/// schedule. Neither is filtered. Pass a transaction: the event and its attempt are
/// written together.
pub async fn send_single(
    conn: &mut PgConnection,
    project_id: ProjectId,
    (endpoint_id, url): (i64, &str),
    (event_type, data_json): (&str, &str),
    (trigger, by): (Trigger, &str),
) -> AppResult<i64> {
    let event_id = crate::core::ids::new_event_id();
    sqlx::query!(
        "INSERT INTO events (event_id, project_id, event_type, data, deliveries) VALUES ($1, $2, $3, $4::json, 1)",
        &event_id,
        project_id.get(),
        event_type,
        data_json as _,
    )
    .execute(&mut *conn)
    .await?;
    Ok((insert_one(
        conn,
        NewAttempt {
            of: AttemptOf {
                project_id,
                event_id: EventId::from(event_id),
                event_type: event_type.to_string(),
                endpoint_id: EndpointId::new(endpoint_id),
                target_url: url.to_string(),
            },
            attempt: 1,
            trigger,
            triggered_by: Some(by.to_string()),
            scheduled_at: None,
            chain_started_at: None,
            request_id: new_request_id(),
            ordering_key: None,
            lane: Lane::Off,
        },
    )
    .await?)
        .get())
}
