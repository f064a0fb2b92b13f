//! The one way attempts enter the deliveries table: event fan-out, the dispatcher's
//! follow-ups, Retry, Redirect, test sends and bulk replay all queue through [`insert`].
//! A new column is one field of [`NewAttempt`], one array and one name below.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::core::status::Trigger;

/// A `pending` attempt to queue.
#[derive(Clone, Debug)]
pub struct NewAttempt {
    pub project_id: i64,
    pub event_id: String,
    pub event_type: String,
    pub endpoint_id: i64,
    pub target_url: String,
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
}

/// Queues the attempts in one statement however many they are; returns each new row's
/// id with its `request_id` (the order of the rows is not promised).
pub async fn insert(
    conn: &mut PgConnection,
    attempts: &[NewAttempt],
) -> Result<Vec<(i64, String)>, sqlx::Error> {
    if attempts.is_empty() {
        return Ok(Vec::new());
    }
    fn column<T>(attempts: &[NewAttempt], f: impl Fn(&NewAttempt) -> T) -> Vec<T> {
        attempts.iter().map(f).collect()
    }
    sqlx::query_as(
        "INSERT INTO deliveries (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                 trigger, triggered_by, status, scheduled_at, chain_started_at,
                                 request_id)
         SELECT n.project_id, n.event_id, n.event_type, n.endpoint_id, n.target_url, n.attempt,
                n.trigger, n.triggered_by, 'pending', coalesce(n.scheduled_at, now()),
                n.chain_started_at, n.request_id
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::int[],
                     $7::text[], $8::text[], $9::timestamptz[], $10::timestamptz[], $11::text[])
              AS n(project_id, event_id, event_type, endpoint_id, target_url, attempt,
                   trigger, triggered_by, scheduled_at, chain_started_at, request_id)
         RETURNING id, request_id",
    )
    .bind(column(attempts, |a| a.project_id))
    .bind(column(attempts, |a| a.event_id.clone()))
    .bind(column(attempts, |a| a.event_type.clone()))
    .bind(column(attempts, |a| a.endpoint_id))
    .bind(column(attempts, |a| a.target_url.clone()))
    .bind(column(attempts, |a| a.attempt))
    .bind(column(attempts, |a| a.trigger.as_str()))
    .bind(column(attempts, |a| a.triggered_by.clone()))
    .bind(column(attempts, |a| a.scheduled_at))
    .bind(column(attempts, |a| a.chain_started_at))
    .bind(column(attempts, |a| a.request_id.clone()))
    .fetch_all(conn)
    .await
}

/// Queues one attempt; returns its id.
pub async fn insert_one(conn: &mut PgConnection, attempt: NewAttempt) -> Result<i64, sqlx::Error> {
    let made = insert(conn, std::slice::from_ref(&attempt)).await?;
    made.first()
        .map(|(id, _)| *id)
        .ok_or(sqlx::Error::RowNotFound)
}
