//! Erasure by data subject (SPEC "Data lifecycle"): the data of every event of a project
//! that names the subject, and what its attempts carried, removed in bounded batches.
//!
//! One batch is one transaction over at most [`BATCH`] events:
//! 1. the events: `data` becomes JSON `null`, `subjects` and the ordering key go,
//!    `erased_at`/`erasure_id` say when and by which request (idempotency keys are only
//!    ever stored hashed, see [`crate::core::idempotency`]);
//! 2. their attempts in the queue are marked (`error_kind = 'erased'`), waiting or in
//!    flight. The mark is what the outcome writer reads when an attempt in flight comes
//!    back: it stores no response body or headers and schedules nothing. Marking every row
//!    first takes the lock of a row a claim is taking, so no row slips from waiting to in
//!    flight unmarked;
//! 3. the waiting ones end as dead letters, error kind `erased`, and their lanes move on;
//! 4. the log's response bodies and headers of their attempts go, and their ordering
//!    keys (often a user id); attempts still in flight keep theirs until they end, since
//!    their lane is released by it, and lose it in the last pass;
//! 5. Redirect copies in inspector bins (found by the attempts' request ids) lose their
//!    bodies.
//!
//! Committed events are seen as erased by every later claim, which dead-letters an
//! attempt of an erased event instead of sending it (a Retry racing the erasure, say).
//! An erasure by subject is done once no event is left and no attempt of its events is
//! in flight any more; a last pass then erases the bin copies that in-flight Redirects
//! made meanwhile, and the ordering keys of the attempts that were in flight.

use crate::core::{EndpointId, EventId, ProjectId};
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use crate::error::{AppError, AppResult};

/// Events erased per transaction: each takes its attempts along, so a batch stays a
/// short transaction however many endpoints an event went to.
pub const BATCH: i64 = 200;

/// An erasure as `GET /erasures/{id}` shows it.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct Erasure {
    pub id: i64,
    #[serde(skip)]
    pub project_id: ProjectId,
    pub subject: Option<String>,
    pub event_id: Option<EventId>,
    pub status: String,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Events whose data was erased.
    pub events: i64,
    /// Attempts of those events (response bodies and headers erased).
    pub attempts: i64,
    /// Attempts that were still waiting and ended as dead letters (`erased`).
    pub dead_lettered: i64,
    /// Redirect copies in inspector bins whose bodies were erased.
    pub inspector_copies: i64,
}

/// Records a request to erase `subject`'s events (those accepted until now), running.
pub async fn create_for_subject(
    conn: &mut PgConnection,
    project_id: ProjectId,
    subject: &str,
    requested_by: &str,
) -> AppResult<Erasure> {
    Ok(sqlx::query_as!(
        Erasure,
        r#"INSERT INTO erasures (project_id, subject, requested_by) VALUES ($1, $2, $3)
         RETURNING id, project_id, subject, event_id AS "event_id: EventId", status, requested_by,
           created_at AS "created_at: DateTime<Utc>", finished_at AS "finished_at: DateTime<Utc>", events, attempts, dead_lettered, inspector_copies"#,
        project_id.get(),
        subject,
        requested_by,
    )
    .fetch_one(conn)
    .await?)
}

/// Records a request to erase one event of the project; `NotFound` if it is not one.
pub async fn create_for_event(
    conn: &mut PgConnection,
    project_id: ProjectId,
    event_id: &EventId,
    requested_by: &str,
) -> AppResult<Erasure> {
    sqlx::query_as!(
        Erasure,
        r#"INSERT INTO erasures (project_id, event_id, requested_by)
         SELECT $1, event_id, $3 FROM events WHERE project_id = $1 AND event_id = $2
         RETURNING id, project_id, subject, event_id AS "event_id: EventId", status, requested_by,
           created_at AS "created_at: DateTime<Utc>", finished_at AS "finished_at: DateTime<Utc>", events, attempts, dead_lettered, inspector_copies"#,
        project_id.get(),
        event_id,
        requested_by,
    )
    .fetch_optional(conn)
    .await?
    .ok_or(AppError::NotFound)
}

pub async fn get(pool: &PgPool, project_id: ProjectId, id: i64) -> AppResult<Erasure> {
    sqlx::query_as!(
        Erasure,
        r#"SELECT id, project_id, subject, event_id AS "event_id: EventId", status, requested_by,
           created_at AS "created_at: DateTime<Utc>", finished_at AS "finished_at: DateTime<Utc>", events, attempts, dead_lettered, inspector_copies FROM erasures WHERE id = $1 AND project_id = $2"#,
        id,
        project_id.get(),
    )
    .fetch_optional(pool)
    .await?
    .ok_or(AppError::NotFound)
}

/// What one step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub events: i64,
    /// The erasure is done.
    pub done: bool,
    /// Nothing left but attempts in flight: try again later.
    pub waiting: bool,
}

/// One step of a running erasure: `id`'s (waiting for its lock), or else the running
/// one that waited longest (skipping any another runner holds). None: nothing to do.
pub async fn step(pool: &PgPool, id: Option<i64>) -> AppResult<Option<(i64, Step)>> {
    let mut tx = pool.begin().await?;
    let erasure: Option<Erasure> = match id {
        Some(id) => {
            sqlx::query_as!(
                Erasure,
                r#"SELECT id, project_id, subject, event_id AS "event_id: EventId", status, requested_by,
           created_at AS "created_at: DateTime<Utc>", finished_at AS "finished_at: DateTime<Utc>", events, attempts, dead_lettered, inspector_copies FROM erasures WHERE id = $1 AND status = 'running' FOR UPDATE"#,
                id,
            )
            .fetch_optional(&mut *tx)
            .await?
        }
        None => {
            sqlx::query_as!(
                Erasure,
                r#"SELECT id, project_id, subject, event_id AS "event_id: EventId", status, requested_by,
           created_at AS "created_at: DateTime<Utc>", finished_at AS "finished_at: DateTime<Utc>", events, attempts, dead_lettered, inspector_copies FROM erasures WHERE status = 'running'
                  ORDER BY touched_at LIMIT 1 FOR UPDATE SKIP LOCKED"#,
            )
            .fetch_optional(&mut *tx)
            .await?
        }
    };
    let Some(erasure) = erasure else {
        return Ok(None);
    };
    let events: Vec<String> = match (&erasure.subject, &erasure.event_id) {
        (Some(subject), _) => {
            sqlx::query_scalar!(
                "SELECT event_id FROM events
              WHERE project_id = $1 AND subjects @> ARRAY[$2]::text[] AND created_at <= $3
              ORDER BY id LIMIT $4 FOR UPDATE",
                erasure.project_id.get(),
                subject,
                erasure.created_at as _,
                BATCH,
            )
            .fetch_all(&mut *tx)
            .await?
        }
        (None, Some(event_id)) => {
            sqlx::query_scalar!(
                "SELECT event_id FROM events
              WHERE project_id = $1 AND event_id = $2 AND erased_at IS NULL FOR UPDATE",
                erasure.project_id.get(),
                event_id,
            )
            .fetch_all(&mut *tx)
            .await?
        }
        (None, None) => Vec::new(),
    };
    let mut step = Step {
        events: events.len() as i64,
        ..Step::default()
    };
    let counts = if events.is_empty() {
        // Nothing left to erase but what attempts in flight may still bring back.
        if in_flight(&mut tx, erasure.id).await? {
            step.waiting = true;
            Counts::default()
        } else {
            let all: Vec<String> = sqlx::query_scalar!(
                "SELECT event_id FROM events WHERE erasure_id = $1",
                erasure.id,
            )
            .fetch_all(&mut *tx)
            .await?;
            step.done = true;
            // A Retry that raced the batch, and bin copies made by attempts in flight.
            let mut last = end_waiting(&mut tx, erasure.id, &all).await?;
            last.copies = erase_copies(&mut tx, &all).await?;
            sqlx::query!(
                "UPDATE delivery_log SET ordering_key = NULL
                  WHERE event_id = ANY($1) AND ordering_key IS NOT NULL",
                &all,
            )
            .execute(&mut *tx)
            .await?;
            last
        }
    } else {
        erase_events(&mut tx, erasure.id, &events).await?
    };
    sqlx::query!(
        "UPDATE erasures
            SET events = events + $2, attempts = attempts + $3, dead_lettered = dead_lettered + $4,
                inspector_copies = inspector_copies + $5, touched_at = now(),
                status = CASE WHEN $6 THEN 'done' ELSE status END,
                finished_at = CASE WHEN $6 THEN now() END
          WHERE id = $1",
        erasure.id,
        step.events,
        counts.attempts,
        counts.dead_lettered,
        counts.copies,
        step.done,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if counts.dead_lettered > 0 {
        super::wakeup::wake_dispatchers(pool).await;
    }
    Ok(Some((erasure.id, step)))
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    attempts: i64,
    dead_lettered: i64,
    copies: i64,
}

/// Steps 1–5 of the module's list for these events.
async fn erase_events(
    tx: &mut PgConnection,
    erasure_id: i64,
    events: &[String],
) -> AppResult<Counts> {
    sqlx::query!(
        "UPDATE events SET data = 'null', subjects = NULL, filtered_out = NULL, ordering_key = NULL,
                erased_at = now(), erasure_id = $1
          WHERE event_id = ANY($2)",
        erasure_id,
        events,
    )
    .execute(&mut *tx)
    .await?;
    let mut counts = end_waiting(tx, erasure_id, events).await?;
    // The signatures go too: with the endpoint's secret they would confirm a guess of
    // the payload.
    sqlx::query!(
        "UPDATE delivery_log SET response_body = NULL, response_headers = NULL,
                request_headers = CASE WHEN request_headers IS NOT NULL THEN
                    coalesce((SELECT jsonb_agg(h) FROM jsonb_array_elements(request_headers) h
                               WHERE lower(h->>0) NOT IN ('x-botix-signature', 'webhook-signature')),
                             '[]'::jsonb) END,
                ordering_key = NULL
          WHERE event_id = ANY($1)",
        events,
    )
    .execute(&mut *tx)
    .await?;
    counts.attempts = sqlx::query_scalar!(
        r#"SELECT (SELECT count(*) FROM delivery_log WHERE event_id = ANY($1))
              + (SELECT count(*) FROM delivery_queue WHERE event_id = ANY($1)) AS "n!""#,
        events,
    )
    .fetch_one(&mut *tx)
    .await?;
    counts.copies = erase_copies(tx, events).await?;
    Ok(counts)
}

/// Marks the events' attempts in the queue and ends the waiting ones as dead letters,
/// freeing their lanes.
async fn end_waiting(
    tx: &mut PgConnection,
    erasure_id: i64,
    events: &[String],
) -> AppResult<Counts> {
    sqlx::query!(
        "UPDATE delivery_queue SET error_kind = 'erased'
          WHERE event_id = ANY($1) AND error_kind IS DISTINCT FROM 'erased'",
        events,
    )
    .execute(&mut *tx)
    .await?;
    let ended: Vec<(ProjectId, EndpointId, Option<String>, Option<i64>)> = sqlx::query!(
        r#"WITH gone AS (
            DELETE FROM delivery_queue WHERE event_id = ANY($1) AND status = 'pending'
            RETURNING *
         ), logged AS (
            INSERT INTO delivery_log (id, created_at, project_id, event_id, event_type, endpoint_id,
                   target_url, attempt, trigger, triggered_by, status, scheduled_at, finished_at,
                   chain_started_at, request_id, error_kind, error, ordering_key, lane_seq)
            SELECT id, created_at, project_id, event_id, event_type, endpoint_id, target_url,
                   attempt, trigger, triggered_by, 'dead_letter', scheduled_at, now(),
                   chain_started_at, request_id, 'erased',
                   format('event erased (erasure #%s): nothing left to send', $2::bigint),
                   ordering_key, lane_seq
              FROM gone
            RETURNING project_id, endpoint_id, ordering_key, lane_seq
         )
         SELECT project_id AS "project_id!: ProjectId", endpoint_id AS "endpoint_id!: EndpointId",
                ordering_key AS "ordering_key?", lane_seq AS "lane_seq?" FROM logged"#,
        events,
        erasure_id,
    )
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .map(|r| (r.project_id, r.endpoint_id, r.ordering_key, r.lane_seq))
    .collect();
    let lanes: Vec<super::queue::lanes::EndedLane> = ended
        .iter()
        .filter_map(|(project, endpoint, key, seq)| match (key, seq) {
            (Some(key), Some(_)) => Some((*project, (*endpoint, key.clone()))),
            _ => None,
        })
        .collect();
    super::queue::lanes::advance(tx, &lanes).await?;
    Ok(Counts {
        dead_lettered: ended.len() as i64,
        ..Counts::default()
    })
}

/// Erases the bodies of the inspector's copies of the events' attempts, and the
/// signatures among their headers (`[name, value]` pairs), as [`erase_events`] does in
/// the log.
async fn erase_copies(tx: &mut PgConnection, events: &[String]) -> AppResult<i64> {
    Ok(sqlx::query!(
        "UPDATE bin_requests SET body = ''::bytea, erased_at = now(),
                headers = CASE WHEN headers IS NOT NULL THEN
                    coalesce((SELECT jsonb_agg(h) FROM jsonb_array_elements(headers) h
                               WHERE lower(h->>0) NOT IN ('x-botix-signature', 'webhook-signature')),
                             '[]'::jsonb) END
          WHERE request_id IN (SELECT request_id FROM deliveries WHERE event_id = ANY($1))
            AND erased_at IS NULL",
        events,
    )
    .execute(&mut *tx)
    .await?
    .rows_affected() as i64)
}

/// Whether an attempt of the erasure's events is still in flight.
async fn in_flight(tx: &mut PgConnection, erasure_id: i64) -> AppResult<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM events e JOIN delivery_queue q ON q.event_id = e.event_id
                         WHERE e.erasure_id = $1 AND q.status = 'in_flight') AS "busy!""#,
        erasure_id,
    )
    .fetch_one(&mut *tx)
    .await?)
}

/// Runs steps of running erasures for about `budget`; returns how many events it erased.
pub async fn tick(pool: &PgPool, budget: std::time::Duration) -> AppResult<i64> {
    let started = std::time::Instant::now();
    let mut erased = 0;
    let mut waiting = std::collections::HashSet::new();
    while started.elapsed() < budget {
        match step(pool, None).await? {
            None => break,
            Some((id, s)) => {
                erased += s.events;
                // Every running erasure waits for attempts in flight: try next tick.
                if s.waiting && !waiting.insert(id) {
                    break;
                }
            }
        }
    }
    Ok(erased)
}

/// Whether the event's data was erased (Retry, Redirect and replays refuse it then).
pub async fn is_erased<'c>(conn: impl sqlx::PgExecutor<'c>, event_id: &EventId) -> AppResult<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT erased_at IS NOT NULL AS "erased!" FROM events WHERE event_id = $1"#,
        event_id,
    )
    .fetch_optional(conn)
    .await?
    .unwrap_or(false))
}
