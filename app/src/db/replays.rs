//! Bulk replay: snapshot the (event, endpoint) pairs a filtered view shows, then enqueue
//! one attempt per pair, throttled per endpoint, until done or cancelled.

use crate::core::{AttemptId, EndpointId, EventId, ProjectId};
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};

use super::queue::enqueue::{AttemptOf, Lane, NewAttempt};
use crate::{
    core::permissions::Access,
    core::{ids::new_request_id, status::Trigger},
    delivery_filter::DeliveryFilter,
    error::{AppError, AppResult},
    model::ReplayProgress,
};

/// Pairs a replay of this view would send: distinct (event, endpoint) of the matching
/// attempts, on endpoints that still exist, excluding redirects.
fn push_pairs(
    q: &mut QueryBuilder<'_, Postgres>,
    access: &Access,
    filter: &DeliveryFilter,
    retention_days: u32,
) -> AppResult<()> {
    q.push(
        "SELECT DISTINCT d.event_id, d.endpoint_id FROM deliveries d
         JOIN endpoints e ON e.id = d.endpoint_id AND e.deleted_at IS NULL WHERE d.trigger <> 'redirect'
           AND NOT EXISTS (SELECT 1 FROM events ev WHERE ev.event_id = d.event_id AND ev.erased_at IS NOT NULL)
           AND ",
    );
    let mut unpaged = filter.clone();
    unpaged.cursor = None;
    super::deliveries::push_filters(q, access, &unpaged, retention_days, false)
}

pub async fn preview(
    pool: &PgPool,
    access: &Access,
    filter: &DeliveryFilter,
    retention_days: u32,
) -> AppResult<i64> {
    let mut q = QueryBuilder::new("SELECT count(*) FROM (");
    push_pairs(&mut q, access, filter, retention_days)?;
    q.push(") pairs");
    Ok(q.build_query_scalar::<i64>().fetch_one(pool).await?)
}

/// Snapshots the view's pairs (`max` at most) into a new running replay; returns its id
/// and how many pairs it holds. Pass the action's transaction.
pub async fn start(
    conn: &mut PgConnection,
    access: &Access,
    filter: &DeliveryFilter,
    retention_days: u32,
    (per_second, max): (i32, u32),
) -> AppResult<(i64, i64)> {
    let id = sqlx::query_scalar!(
        "INSERT INTO replays (project_id, created_by, filter, per_second) VALUES ($1, $2, $3, $4) RETURNING id",
        access.project_id.get(),
        &access.email,
        sqlx::types::Json(filter) as _,
        per_second,
    )
    .fetch_one(&mut *conn)
    .await?;
    let mut q =
        QueryBuilder::new("INSERT INTO replay_items (replay_id, event_id, endpoint_id) SELECT ");
    q.push_bind(id).push(", p.event_id, p.endpoint_id FROM (");
    push_pairs(&mut q, access, filter, retention_days)?;
    q.push(") p LIMIT ").push_bind(max as i64);
    let total = q.build().execute(&mut *conn).await?.rows_affected();
    // Recovering a window where nothing is still failing is not a mistake: the replay is
    // done as it starts (and holds no place among the project's running replays).
    if total == 0 && filter.unresolved {
        sqlx::query!(
            "UPDATE replays SET status = 'done', finished_at = now() WHERE id = $1",
            id
        )
        .execute(&mut *conn)
        .await?;
        return Ok((id, 0));
    }
    if total == 0 {
        return Err(AppError::Invalid(
            "Nothing matches this view: no replay started.".into(),
        ));
    }
    sqlx::query!(
        "UPDATE replays SET total = $2 WHERE id = $1",
        id,
        total as i32
    )
    .execute(&mut *conn)
    .await?;
    Ok((id, total as i64))
}

pub async fn progress(
    conn: &mut PgConnection,
    access: &Access,
    id: i64,
) -> AppResult<ReplayProgress> {
    let replay = sqlx::query!(
        "SELECT id, total, queued, status, per_second FROM replays WHERE id = $1 AND project_id = $2",
        id,
        access.project_id.get(),
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(AppError::NotFound)?;
    let delivered = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM replay_items ri JOIN deliveries d ON d.id = ri.delivery_id
         WHERE ri.replay_id = $1 AND d.status IN ('succeeded', 'failed', 'dead_letter')"#,
        id,
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(ReplayProgress {
        id: replay.id,
        total: replay.total,
        queued: replay.queued,
        finished: delivered as i32,
        status: replay.status,
        per_second: replay.per_second,
    })
}

/// Stops a running replay (a finished one stays as it is); unknown or another project's:
/// not found.
pub async fn cancel(conn: &mut PgConnection, access: &Access, id: i64) -> AppResult<()> {
    let n = sqlx::query!(
        "UPDATE replays SET status = 'cancelled', finished_at = now()
         WHERE id = $1 AND project_id = $2 AND status = 'running'",
        id,
        access.project_id.get(),
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if n == 0 {
        progress(conn, access, id).await?; // 404 if it is not the caller's
    }
    Ok(())
}

/// A running replay, as the tick reads it.
struct Running {
    id: i64,
    project_id: ProjectId,
    created_by: String,
    per_second: i32,
}

/// One second's worth of every running replay: up to `per_second` new attempts per
/// endpoint. Returns how many attempts were queued.
pub async fn tick(pool: &PgPool) -> AppResult<u64> {
    let running = sqlx::query_as!(
        Running,
        r#"SELECT id, project_id AS "project_id: ProjectId", created_by, per_second
             FROM replays WHERE status = 'running'"#,
    )
    .fetch_all(pool)
    .await?;
    let mut queued = 0;
    for replay in running {
        queued += tick_one(pool, &replay).await?;
    }
    Ok(queued)
}

/// One replay's second, in its own transaction: pick the next pairs, queue those still
/// deliverable, mark every picked pair as handled. A replay with nothing left is done.
async fn tick_one(pool: &PgPool, replay: &Running) -> AppResult<u64> {
    let mut tx = pool.begin().await?;
    if !lock_running(&mut tx, replay.id).await? {
        return Ok(0);
    }
    let picked = next_pairs(&mut tx, replay).await?;
    if picked.is_empty() {
        sqlx::query!(
            "UPDATE replays SET status = 'done', finished_at = now() WHERE id = $1",
            replay.id
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        return Ok(0);
    }
    let (events, endpoints): (Vec<EventId>, Vec<EndpointId>) = picked.into_iter().unzip();
    let mut attempts = queueable(&mut tx, replay, &events, &endpoints).await?;
    super::queue::lanes::join(&mut tx, &mut attempts).await?;
    let made = insert(&mut tx, &attempts).await?;
    mark_handled(&mut tx, replay.id, (&events, &endpoints), &made).await?;
    tx.commit().await?;
    Ok(made.len() as u64)
}

/// Locks the replay row if it is still running: two servers ticking at once take turns.
async fn lock_running(conn: &mut PgConnection, id: i64) -> AppResult<bool> {
    let still = sqlx::query_scalar!(
        "SELECT status FROM replays WHERE id = $1 FOR UPDATE SKIP LOCKED",
        id
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(still.as_deref() == Some("running"))
}

/// The next (event, endpoint) pairs: endpoint by endpoint (a skip scan of the items
/// left), a few each, so the cost follows the endpoints, never the items left (100,000
/// ranked every second).
async fn next_pairs(
    conn: &mut PgConnection,
    replay: &Running,
) -> AppResult<Vec<(EventId, EndpointId)>> {
    let rows = sqlx::query!(
        r#"WITH RECURSIVE left_for(endpoint_id) AS (
            (SELECT endpoint_id FROM replay_items
              WHERE replay_id = $1 AND delivery_id IS NULL ORDER BY endpoint_id LIMIT 1)
            UNION ALL
            SELECT (SELECT i.endpoint_id FROM replay_items i
                     WHERE i.replay_id = $1 AND i.delivery_id IS NULL AND i.endpoint_id > l.endpoint_id
                     ORDER BY i.endpoint_id LIMIT 1)
            FROM left_for l WHERE l.endpoint_id IS NOT NULL
         )
         SELECT p.event_id AS "event_id!: EventId", p.endpoint_id AS "endpoint_id!: EndpointId"
           FROM left_for l
         CROSS JOIN LATERAL (
            SELECT i.event_id, i.endpoint_id FROM replay_items i
             WHERE i.replay_id = $1 AND i.delivery_id IS NULL AND i.endpoint_id = l.endpoint_id
             ORDER BY i.event_id LIMIT $2) p"#,
        replay.id,
        replay.per_second as i64,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.event_id, r.endpoint_id))
        .collect())
}

/// A picked pair with what its attempt needs.
struct Pair {
    event_id: EventId,
    event_type: String,
    endpoint_id: EndpointId,
    url: String,
    attempt: i32,
    ordering_key: Option<String>,
    filter: Option<String>,
    data: String,
    subjects: Option<Vec<String>>,
}

/// The attempts for the picked pairs, in the order the events were accepted (keyed ones
/// join their lanes in that order). Pairs whose event or endpoint is gone, or whose event
/// was erased, are left out, and so are those the endpoint's filter keeps out as it is now.
async fn queueable(
    conn: &mut PgConnection,
    replay: &Running,
    events: &[EventId],
    endpoints: &[EndpointId],
) -> AppResult<Vec<NewAttempt>> {
    let pairs = sqlx::query_as!(
        Pair,
        r#"SELECT p.event_id AS "event_id!: EventId", ev.event_type,
                p.endpoint_id AS "endpoint_id!: EndpointId", e.url,
                (SELECT coalesce(max(attempt), 0) + 1 FROM deliveries x
                 WHERE x.event_id = p.event_id AND x.endpoint_id = p.endpoint_id) AS "attempt!",
                ev.ordering_key, e.filter, ev.data::text AS "data!", ev.subjects
         FROM unnest($1::text[], $2::bigint[]) AS p(event_id, endpoint_id)
         JOIN events ev ON ev.event_id = p.event_id AND ev.erased_at IS NULL AND ev.project_id = $3
         JOIN endpoints e ON e.id = p.endpoint_id AND e.deleted_at IS NULL AND e.project_id = $3
         ORDER BY ev.id"#,
        events as _,
        endpoints as _,
        replay.project_id.get(),
    )
    .fetch_all(&mut *conn)
    .await?;
    let by = format!("{} (bulk replay #{})", replay.created_by, replay.id);
    Ok(pairs
        .into_iter()
        .filter(|p| {
            super::targets::passes_now(
                p.filter.as_deref(),
                &p.event_type,
                &p.data,
                p.subjects.as_deref().unwrap_or_default(),
            )
            .is_none()
        })
        .map(|p| attempt(replay.project_id, p, &by))
        .collect())
}

fn attempt(project_id: ProjectId, p: Pair, by: &str) -> NewAttempt {
    NewAttempt {
        of: AttemptOf {
            project_id,
            event_id: p.event_id,
            event_type: p.event_type,
            endpoint_id: p.endpoint_id,
            target_url: p.url,
        },
        attempt: p.attempt,
        trigger: Trigger::ManualRetry,
        triggered_by: Some(by.to_string()),
        scheduled_at: None,
        chain_started_at: None,
        request_id: new_request_id(),
        // A replay joins the end of its key's lane.
        lane: match p.ordering_key {
            Some(_) => Lane::Join { waits_for: None },
            None => Lane::Off,
        },
        ordering_key: p.ordering_key,
    }
}

/// Inserts the attempts; returns each made delivery as (id, event, endpoint).
async fn insert(
    conn: &mut PgConnection,
    attempts: &[NewAttempt],
) -> AppResult<Vec<(AttemptId, EventId, EndpointId)>> {
    let pair_of: std::collections::HashMap<&str, &NewAttempt> = attempts
        .iter()
        .map(|a| (a.request_id.as_str(), a))
        .collect();
    Ok(super::queue::enqueue::insert(conn, attempts)
        .await?
        .into_iter()
        .filter_map(|(delivery_id, request_id)| {
            let a = pair_of.get(request_id.as_str())?;
            Some((delivery_id, a.of.event_id.clone(), a.of.endpoint_id))
        })
        .collect())
}

/// Every picked pair gets its delivery's id; those that could not be queued (event or
/// endpoint gone, filtered out) are marked done with 0. The replay counts them all.
async fn mark_handled(
    conn: &mut PgConnection,
    id: i64,
    (events, endpoints): (&[EventId], &[EndpointId]),
    made: &[(AttemptId, EventId, EndpointId)],
) -> AppResult<()> {
    sqlx::query!(
        "UPDATE replay_items ri SET delivery_id = coalesce(m.id, 0)
         FROM unnest($2::text[], $3::bigint[]) AS p(event_id, endpoint_id)
         LEFT JOIN unnest($4::bigint[], $5::text[], $6::bigint[]) AS m(id, event_id, endpoint_id)
           ON m.event_id = p.event_id AND m.endpoint_id = p.endpoint_id
         WHERE ri.replay_id = $1 AND ri.event_id = p.event_id AND ri.endpoint_id = p.endpoint_id",
        id,
        events as _,
        endpoints as _,
        &made.iter().map(|m| m.0.get()).collect::<Vec<_>>(),
        made.iter().map(|m| m.1.clone()).collect::<Vec<_>>() as _,
        &made.iter().map(|m| m.2.get()).collect::<Vec<_>>(),
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "UPDATE replays SET queued = queued + $2 WHERE id = $1",
        id,
        events.len() as i32
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}
