//! Outcomes: a batch of finished attempts moves from the queue into the log in one
//! statement, with the endpoints' health, dead-letter tallies, follow-up attempts and
//! the lanes their ends free, in one transaction.

use super::{
    enqueue::{self, AttemptOf, Lane, NewAttempt},
    lanes,
};
use crate::core::{AttemptId, EndpointId, EventId, ProjectId};
use crate::{
    core::status::{DeliveryStatus, ErrorKind, Trigger},
    db::endpoint_health::Health,
};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// The recorded outcome of one attempt, and the attempt it schedules, if any.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub id: AttemptId,
    pub created_at: DateTime<Utc>,
    pub status: DeliveryStatus,
    /// When the request went out (the log's `started_at`; the queue's is the claim).
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: i32,
    pub request_headers: Vec<(String, String)>,
    pub response_status: Option<i16>,
    pub response_headers: Option<Vec<(String, String)>>,
    pub response_body: Option<String>,
    pub error_kind: Option<ErrorKind>,
    pub error: Option<String>,
    pub chain_started_at: DateTime<Utc>,
    pub next: Option<NextAttempt>,
}

#[derive(Clone, Debug)]
pub struct NextAttempt {
    pub of: AttemptOf,
    /// The chain's trigger: `auto`, or `notice` for the operations endpoint's notices.
    pub trigger: Trigger,
    pub attempt: i32,
    pub scheduled_at: DateTime<Utc>,
    pub request_id: String,
}

impl NextAttempt {
    /// The follow-up as it is queued: in its chain, continuing the chain that began at
    /// `chain_started_at`, in its key's lane if the attempt before it was.
    pub fn queued(
        &self,
        chain_started_at: DateTime<Utc>,
        ordering_key: Option<String>,
        lane: Lane,
    ) -> NewAttempt {
        NewAttempt {
            of: self.of.clone(),
            attempt: self.attempt,
            trigger: self.trigger,
            triggered_by: None,
            scheduled_at: Some(self.scheduled_at),
            chain_started_at: Some(chain_started_at),
            request_id: self.request_id.clone(),
            ordering_key,
            lane,
        }
    }
}

/// Writes a batch of outcomes and their follow-up attempts in one transaction: one
/// statement moves the finished rows from the queue into the log, and at most one INSERT
/// queues the follow-ups, however large the batch. Rows this worker no longer holds (its
/// lease was taken over) are left alone, and their follow-ups are not queued.
pub async fn record(
    conn: &mut PgConnection,
    worker: &str,
    batch: &[Outcome],
) -> Result<u64, sqlx::Error> {
    if batch.is_empty() {
        return Ok(0);
    }
    // Most batches are successes that end their chains: they move in one statement,
    // its own transaction. What it leaves (rows in a lane, or no longer ours) takes the
    // whole way.
    if batch
        .iter()
        .all(|o| o.status == DeliveryStatus::Succeeded && o.next.is_none())
    {
        let moved: std::collections::HashSet<AttemptId> = bind_outcomes(
            sqlx::query_as::<_, (AttemptId,)>(&MOVE_SUCCESSES),
            worker,
            batch,
        )
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect();
        if moved.len() == batch.len() {
            return Ok(moved.len() as u64);
        }
        let rest: Vec<Outcome> = batch
            .iter()
            .filter(|o| !moved.contains(&o.id))
            .cloned()
            .collect();
        return Ok(moved.len() as u64 + record_in_transaction(conn, worker, &rest).await?);
    }
    record_in_transaction(conn, worker, batch).await
}

/// The outcomes as [`MOVE`] reads them: the worker as $1, the columns as $2–$14.
fn bind_outcomes<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    worker: &str,
    batch: &[Outcome],
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    query
        .bind(worker.to_string())
        .bind(batch.iter().map(|o| o.id).collect::<Vec<AttemptId>>())
        .bind(batch.iter().map(|o| o.created_at).collect::<Vec<_>>())
        .bind(batch.iter().map(|o| o.status).collect::<Vec<_>>())
        .bind(batch.iter().map(|o| o.finished_at).collect::<Vec<_>>())
        .bind(batch.iter().map(|o| o.duration_ms).collect::<Vec<i32>>())
        .bind(
            batch
                .iter()
                .map(|o| serde_json::json!(o.request_headers))
                .collect::<Vec<_>>(),
        )
        .bind(batch.iter().map(|o| o.response_status).collect::<Vec<_>>())
        .bind(
            batch
                .iter()
                .map(|o| o.response_headers.as_ref().map(|h| serde_json::json!(h)))
                .collect::<Vec<_>>(),
        )
        .bind(
            batch
                .iter()
                .map(|o| o.response_body.clone())
                .collect::<Vec<_>>(),
        )
        .bind(batch.iter().map(|o| o.error_kind).collect::<Vec<_>>())
        .bind(batch.iter().map(|o| o.error.clone()).collect::<Vec<_>>())
        .bind(batch.iter().map(|o| o.chain_started_at).collect::<Vec<_>>())
        .bind(batch.iter().map(|o| o.started_at).collect::<Vec<_>>())
}

/// Moves the rows of the outcomes ($1 the worker, $2–$14 their columns) that this
/// worker still holds from the queue into the log, finished; `{only}` narrows the rows
/// taken, `{then}` follows as more CTEs reading `logged`.
fn move_statement(only: &str, then: &str) -> String {
    format!(
        "WITH u AS (
            SELECT * FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::timestamptz[], $6::int[],
                                 $7::jsonb[], $8::smallint[], $9::jsonb[], $10::text[], $11::text[], $12::text[],
                                 $13::timestamptz[], $14::timestamptz[])
                AS u(id, created_at, status, finished_at, duration_ms, request_headers, response_status,
                     response_headers, response_body, error_kind, error, chain_started_at, started_at)
         ), done AS (
            DELETE FROM delivery_queue d USING u
             WHERE d.id = u.id AND d.created_at = u.created_at AND d.status = 'in_flight' AND d.claimed_by = $1
                   {only}
            -- A row an erasure marked while it was in flight keeps what happened (status,
            -- code, times) but not what came back, and schedules nothing: a failure that
            -- would be retried ends as a dead letter instead.
            RETURNING d.id, d.created_at, d.project_id, d.event_id, d.event_type, d.endpoint_id, d.target_url,
                      d.attempt, d.trigger, d.triggered_by,
                      CASE WHEN d.error_kind = 'erased' AND u.status = 'failed' THEN 'dead_letter'
                           ELSE u.status END,
                      d.scheduled_at, u.started_at,
                      u.finished_at, u.duration_ms, d.claimed_by, u.chain_started_at, d.request_id,
                      CASE WHEN d.error_kind = 'erased' THEN NULL ELSE u.request_headers END,
                      u.response_status,
                      CASE WHEN d.error_kind = 'erased' THEN NULL ELSE u.response_headers END,
                      CASE WHEN d.error_kind = 'erased' THEN NULL ELSE u.response_body END,
                      CASE WHEN d.error_kind = 'erased' AND u.status = 'failed' THEN 'erased'
                           ELSE u.error_kind END,
                      CASE WHEN d.error_kind = 'erased' AND u.status = 'failed'
                           THEN 'event erased in flight; ' || coalesce(u.error, '') ELSE u.error END,
                      d.ordering_key, d.lane_seq
         ), logged AS (
            INSERT INTO delivery_log (id, created_at, project_id, event_id, event_type, endpoint_id, target_url,
                   attempt, trigger, triggered_by, status, scheduled_at, started_at, finished_at, duration_ms,
                   claimed_by, chain_started_at, request_id, request_headers, response_status, response_headers,
                   response_body, error_kind, error, ordering_key, lane_seq)
            SELECT * FROM done
            RETURNING id, project_id, endpoint_id, event_id, trigger, ordering_key, lane_seq,
                      error_kind IS NOT DISTINCT FROM 'erased' AS erased
         ){then}"
    )
}

/// Every outcome of the batch moved to the log; the rows as written.
static MOVE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| move_statement("", " SELECT * FROM logged"));

/// Successes that end their chains outside any lane, with their endpoints' health
/// (a success clears `failing_since`, locked in id order as
/// [`crate::db::endpoint_health::note`] does, and skipped while someone else holds the
/// endpoint's row, as there): nothing else to write, so one statement. Returns the ids
/// moved.
static MOVE_SUCCESSES: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    move_statement(
        "AND d.lane_seq IS NULL",
        ", healthy AS (
            SELECT e.id FROM endpoints e
             WHERE e.id IN (SELECT endpoint_id FROM logged WHERE trigger IN ('auto', 'manual_retry'))
               AND e.failing_since IS NOT NULL
             ORDER BY e.id FOR NO KEY UPDATE OF e SKIP LOCKED
         ), cleared AS (
            UPDATE endpoints e SET failing_since = NULL FROM healthy h WHERE e.id = h.id
         )
         SELECT id FROM logged",
    )
});

/// [`record`] for any batch: the moves, then the endpoints' health, dead-letter tallies,
/// follow-up attempts and lanes, in one transaction.
async fn record_in_transaction(
    conn: &mut PgConnection,
    worker: &str,
    batch: &[Outcome],
) -> Result<u64, sqlx::Error> {
    if batch.is_empty() {
        return Ok(0);
    }
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    // The row leaves the queue and is written once, finished, into the log.
    let updated: Vec<Recorded> = bind_outcomes(sqlx::query_as(&MOVE), worker, batch)
        .fetch_all(&mut *tx)
        .await?;
    let recorded: std::collections::HashMap<AttemptId, &Recorded> =
        updated.iter().map(|r| (r.id, r)).collect();
    let written: Vec<(&Outcome, &Recorded)> = batch
        .iter()
        .filter_map(|o| Some((o, *recorded.get(&o.id)?)))
        .collect();
    crate::db::endpoint_health::note(&mut tx, &health_of(&written)).await?;
    let dead: Vec<(EndpointId, EventId)> = written
        .iter()
        .filter(|(o, r)| {
            o.status == DeliveryStatus::DeadLetter && r.trigger == Trigger::Auto && !r.erased
        })
        .map(|(_, r)| (r.endpoint_id, r.event_id.clone()))
        .collect();
    crate::db::endpoint_health::tally_dead_letters(&mut tx, &dead).await?;
    // A chain in a lane that ended here frees its lane for the next event.
    let ended: Vec<lanes::EndedLane> = written
        .iter()
        .filter(|(o, r)| o.next.is_none() || r.erased)
        .filter_map(|(_, r)| match (&r.ordering_key, r.lane_seq) {
            (Some(key), Some(_)) => Some((r.project_id, (r.endpoint_id, key.clone()))),
            _ => None,
        })
        .collect();
    let next: Vec<(&NextAttempt, DateTime<Utc>, &Recorded)> = written
        .iter()
        .filter(|(_, r)| !r.erased)
        .filter_map(|(o, r)| o.next.as_ref().map(|n| (n, o.chain_started_at, *r)))
        .collect();
    let next: Vec<NewAttempt> = next
        .into_iter()
        .map(|(n, chain_started_at, r)| {
            let lane = r.lane_seq.map_or(Lane::Off, Lane::Continue);
            n.queued(chain_started_at, r.ordering_key.clone(), lane)
        })
        .collect();
    enqueue::insert(&mut tx, &next).await?;
    let released = lanes::advance(&mut tx, &ended).await?;
    tx.commit().await?;
    if released > 0 {
        crate::db::wakeup::wake_dispatchers(&mut *conn).await;
    }
    Ok(updated.len() as u64)
}

/// A row as [`record`] wrote its outcome.
#[derive(sqlx::FromRow)]
struct Recorded {
    id: AttemptId,
    project_id: ProjectId,
    endpoint_id: EndpointId,
    event_id: EventId,
    trigger: Trigger,
    ordering_key: Option<String>,
    lane_seq: Option<i64>,
    /// An erasure marked it in flight: what came back was not kept, nothing follows.
    erased: bool,
}

/// Each endpoint's latest outcome in the batch, from the attempts that speak for its
/// health (automatic ones and manual retries; not redirects to bins or test sends).
fn health_of(written: &[(&Outcome, &Recorded)]) -> Vec<Health> {
    let mut by_endpoint: std::collections::BTreeMap<EndpointId, Health> = Default::default();
    let mut sorted: Vec<&(&Outcome, &Recorded)> = written
        .iter()
        .filter(|(o, r)| {
            matches!(r.trigger, Trigger::Auto | Trigger::ManualRetry)
                && o.error_kind != Some(ErrorKind::Erased)
                && !r.erased
        })
        .collect();
    sorted.sort_by_key(|(o, _)| o.finished_at);
    for (o, r) in sorted {
        let ok = o.status == DeliveryStatus::Succeeded;
        let h = by_endpoint.entry(r.endpoint_id).or_insert(Health {
            endpoint_id: r.endpoint_id,
            ok,
            first_failure: o.finished_at,
        });
        if ok {
            h.ok = true;
        } else if h.ok {
            // The first failure after the batch's last success.
            h.ok = false;
            h.first_failure = o.finished_at;
        }
    }
    by_endpoint.into_values().collect()
}
