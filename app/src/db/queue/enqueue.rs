//! The one way attempts enter the queue (`delivery_queue`, read through `deliveries`): event fan-out, the dispatcher's
//! follow-ups, Retry, Redirect, test sends and bulk replay all queue through [`insert`].
//! A new column is one field of [`NewAttempt`], one array and one name below.

use crate::core::{AttemptId, EndpointId, EventId, ProjectId};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::core::status::Trigger;

/// Whose attempt it is and where it goes: what every shape of an attempt (queued,
/// claimed, followed up) carries unchanged from the one before it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct AttemptOf {
    pub project_id: ProjectId,
    pub event_id: EventId,
    pub event_type: String,
    pub endpoint_id: EndpointId,
    pub target_url: String,
}

/// A `pending` attempt to queue.
#[derive(Clone, Debug)]
pub struct NewAttempt {
    pub of: AttemptOf,
    /// 1 for the first attempt of a chain; manual retries continue the count.
    pub attempt: i32,
    pub trigger: Trigger,
    /// Who asked for a manual attempt.
    pub triggered_by: Option<String>,
    /// None: due at once.
    pub scheduled_at: Option<DateTime<Utc>>,
    /// When the automatic chain this attempt continues began (None for a first attempt).
    pub chain_started_at: Option<DateTime<Utc>>,
    pub request_id: String,
    /// The event's ordering key, shown with every attempt of it.
    pub ordering_key: Option<String>,
    /// The attempt's place in its key's lane, if it is in one.
    pub lane: Lane,
}

/// Where an attempt stands in its ordering key's lane (see [`super::lanes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Lane {
    /// Not in a lane: no key, or a manual retry, redirect or test send (keys are ignored).
    #[default]
    Off,
    /// A new chain joining the end of its lane, waiting for `waits_for` if that is set
    /// (by [`super::lanes::join`], under the lane's lock).
    Join { waits_for: Option<EventId> },
    /// A later attempt of the chain whose lane_seq this is.
    Continue(i64),
}

impl Lane {
    /// Queued behind an unfinished chain of its lane.
    pub fn is_waiting(&self) -> bool {
        matches!(self, Lane::Join { waits_for: Some(_) })
    }

    /// The `lane_seq` column as bound: 0 takes a new one from the sequence (which starts
    /// at 1).
    fn seq(&self) -> Option<i64> {
        match self {
            Lane::Off => None,
            Lane::Join { .. } => Some(0),
            Lane::Continue(seq) => Some(*seq),
        }
    }

    fn waits_for(&self) -> Option<EventId> {
        match self {
            Lane::Join { waits_for } => waits_for.clone(),
            _ => None,
        }
    }
}

/// Queues the attempts in one statement however many they are; returns each new row's
/// id with its `request_id` (the order of the rows is not promised).
pub async fn insert(
    conn: &mut PgConnection,
    attempts: &[NewAttempt],
) -> Result<Vec<(AttemptId, String)>, sqlx::Error> {
    Ok(insert_leased(conn, attempts, None)
        .await?
        .into_iter()
        .map(|r| (r.id, r.request_id))
        .collect())
}

/// A dispatcher the attempts marked `true` go to already leased (see
/// [`super::handoff`]): inserted `in_flight`, claimed by `worker` for `lease`.
pub struct LeaseTo<'a> {
    pub worker: &'a str,
    pub lease: chrono::Duration,
    pub taken: &'a [bool],
}

/// A row as inserted.
#[derive(Debug, sqlx::FromRow)]
pub struct Inserted {
    pub id: AttemptId,
    pub request_id: String,
    pub created_at: DateTime<Utc>,
    /// Set for a row inserted already leased.
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// The statement that queues attempts from the arrays [`bind_attempts`] binds as $1–$17;
/// `$from` joins more relations to the source (one row each, or the insert is skipped).
///
/// An attempt's time (`created_at`, what the dashboard and `GET /deliveries` show and
/// order by) is when it is due: now for a first attempt or a manual action, the future
/// for a scheduled retry or a paced replay. Never before its transaction began, so the
/// commit horizon still holds.
macro_rules! queue_insert {
    ($from:literal) => {
        concat!(
            "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                 trigger, triggered_by, status, created_at, scheduled_at, chain_started_at,
                                 request_id, started_at, claimed_by, lease_expires_at,
                                 ordering_key, lane_seq, waits_for, parked)
         SELECT n.project_id, n.event_id, n.event_type, n.endpoint_id, n.target_url, n.attempt,
                n.trigger, n.triggered_by,
                CASE WHEN n.taken THEN 'in_flight' ELSE 'pending' END,
                greatest(coalesce(n.scheduled_at, now()), now()),
                coalesce(n.scheduled_at, now()), n.chain_started_at, n.request_id,
                CASE WHEN n.taken THEN now() END,
                CASE WHEN n.taken THEN $13 END,
                CASE WHEN n.taken THEN now() + $14 END,
                n.ordering_key,
                CASE WHEN n.lane_seq = 0 THEN nextval('deliveries_lane_seq') ELSE n.lane_seq END,
                n.waits_for, n.waits_for IS NOT NULL
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::int[],
                     $7::text[], $8::text[], $9::timestamptz[], $10::timestamptz[], $11::text[],
                     $12::bool[], $15::text[], $16::bigint[], $17::text[])
              AS n(project_id, event_id, event_type, endpoint_id, target_url, attempt,
                   trigger, triggered_by, scheduled_at, chain_started_at, request_id, taken,
                   ordering_key, lane_seq, waits_for)",
            $from,
            " RETURNING id, request_id, created_at, lease_expires_at, event_id"
        )
    };
}
pub(crate) use queue_insert;

/// Binds the attempts as [`queue_insert`] reads them, as parameters $1–$17.
pub(crate) fn bind_attempts<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    attempts: &[NewAttempt],
    lease_to: Option<&LeaseTo<'_>>,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    fn column<T>(attempts: &[NewAttempt], f: impl Fn(&NewAttempt) -> T) -> Vec<T> {
        attempts.iter().map(f).collect()
    }
    let taken: Vec<bool> = (0..attempts.len())
        .map(|i| lease_to.is_some_and(|l| l.taken.get(i).copied().unwrap_or(false)))
        .collect();
    query
        .bind(column(attempts, |a| a.of.project_id))
        .bind(column(attempts, |a| a.of.event_id.clone()))
        .bind(column(attempts, |a| a.of.event_type.clone()))
        .bind(column(attempts, |a| a.of.endpoint_id))
        .bind(column(attempts, |a| a.of.target_url.clone()))
        .bind(column(attempts, |a| a.attempt))
        .bind(column(attempts, |a| a.trigger.as_str()))
        .bind(column(attempts, |a| a.triggered_by.clone()))
        .bind(column(attempts, |a| a.scheduled_at))
        .bind(column(attempts, |a| a.chain_started_at))
        .bind(column(attempts, |a| a.request_id.clone()))
        .bind(taken)
        .bind(lease_to.map(|l| l.worker.to_string()))
        .bind(lease_to.map_or(chrono::Duration::zero(), |l| l.lease))
        .bind(column(attempts, |a| a.ordering_key.clone()))
        .bind(column(attempts, |a| a.lane.seq()))
        .bind(column(attempts, |a| a.lane.waits_for()))
}

/// [`insert`], with some attempts inserted already leased to a dispatcher.
pub async fn insert_leased(
    conn: &mut PgConnection,
    attempts: &[NewAttempt],
    lease_to: Option<LeaseTo<'_>>,
) -> Result<Vec<Inserted>, sqlx::Error> {
    if attempts.is_empty() {
        return Ok(Vec::new());
    }
    bind_attempts(
        sqlx::query_as(queue_insert!("")),
        attempts,
        lease_to.as_ref(),
    )
    .fetch_all(conn)
    .await
}

/// Queues one attempt; returns its id.
pub async fn insert_one(
    conn: &mut PgConnection,
    attempt: NewAttempt,
) -> Result<AttemptId, sqlx::Error> {
    let made = insert(conn, std::slice::from_ref(&attempt)).await?;
    made.first()
        .map(|(id, _)| *id)
        .ok_or(sqlx::Error::RowNotFound)
}
