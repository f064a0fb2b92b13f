//! Reading stored events: one by id, a project's in cursor order, and the types it
//! has sent (the catalogue and the filter bar). Storing them is [`super::events`].

use crate::core::{EventId, ProjectId};
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::{
    core::cursor::Cursor,
    error::{AppError, AppResult},
};

#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct StoredEvent {
    #[serde(skip)]
    pub seq: i64,
    #[serde(rename = "id")]
    pub event_id: EventId,
    #[serde(rename = "event")]
    pub event_type: String,
    pub data: sqlx::types::Json<Box<serde_json::value::RawValue>>,
    pub deliveries: i32,
    pub ordering_key: Option<String>,
    pub created_at: DateTime<Utc>,
    /// None once erased, as when none were given.
    pub subjects: Option<Vec<String>>,
    pub erased_at: Option<DateTime<Utc>>,
    pub erasure_id: Option<i64>,
    /// Subscribed endpoints its filters skipped, and why (None: none were).
    pub filtered_out: Option<sqlx::types::Json<Vec<super::targets::Skipped>>>,
}

pub async fn get(
    pool: &PgPool,
    project_id: ProjectId,
    event_id: &EventId,
) -> AppResult<StoredEvent> {
    sqlx::query_as!(
        StoredEvent,
        r#"SELECT id AS seq, event_id, event_type,
                data AS "data: sqlx::types::Json<Box<serde_json::value::RawValue>>", deliveries,
                ordering_key, created_at AS "created_at: DateTime<Utc>", subjects,
                erased_at AS "erased_at: DateTime<Utc>", erasure_id,
                filtered_out AS "filtered_out: sqlx::types::Json<Vec<super::targets::Skipped>>" FROM events WHERE event_id = $1 AND project_id = $2"#,
        event_id,
        project_id.get(),
    )
    .fetch_optional(pool)
    .await?
    .ok_or(AppError::NotFound)
}

/// Ascending by (created_at, id) after `after`, up to the commit horizon (see
/// [`super::horizon::commit_horizon`]), so a poller walking the cursor sees every event exactly once.
pub async fn page(
    pool: &PgPool,
    project_id: ProjectId,
    after: Option<Cursor>,
    since: Option<DateTime<Utc>>,
    event_type: Option<&str>,
    limit: i64,
) -> AppResult<Vec<StoredEvent>> {
    let mut conn = pool.acquire().await?;
    let horizon = super::horizon::commit_horizon(&mut conn).await?;
    let (after_ts, after_id) = after
        .map(|c| (c.created_at, c.id))
        .unwrap_or((DateTime::<Utc>::UNIX_EPOCH, 0));
    Ok(sqlx::query_as!(
        StoredEvent,
        r#"SELECT id AS seq, event_id, event_type,
                data AS "data: sqlx::types::Json<Box<serde_json::value::RawValue>>", deliveries,
                ordering_key, created_at AS "created_at: DateTime<Utc>", subjects,
                erased_at AS "erased_at: DateTime<Utc>", erasure_id,
                filtered_out AS "filtered_out: sqlx::types::Json<Vec<super::targets::Skipped>>" FROM events
         WHERE project_id = $1 AND (created_at, id) > ($2, $3) AND created_at < $4
           AND ($5::timestamptz IS NULL OR created_at >= $5)
           AND ($6::text IS NULL OR event_type = $6)
         ORDER BY created_at, id LIMIT $7"#,
        project_id.get(),
        after_ts as _,
        after_id,
        horizon as _,
        since as _,
        event_type,
        limit,
    )
    .fetch_all(&mut *conn)
    .await?)
}

/// The event types a project has sent within the retention window, for the filter bar.
pub async fn recent_types(
    pool: &PgPool,
    project_id: ProjectId,
    retention_days: u32,
) -> AppResult<Vec<String>> {
    Ok(sqlx::query_scalar!(
        "SELECT DISTINCT event_type FROM events
         WHERE project_id = $1 AND created_at > now() - make_interval(days => $2)
         ORDER BY 1 LIMIT 200",
        project_id.get(),
        retention_days as i32,
    )
    .fetch_all(pool)
    .await?)
}

/// One event type as the catalogue shows it: how many within the retention window, when
/// last, and the newest payload as an example.
pub type TypeSeen = (String, i64, Option<DateTime<Utc>>, Option<String>);

pub async fn types_seen(
    pool: &PgPool,
    project_id: ProjectId,
    retention_days: u32,
) -> AppResult<Vec<TypeSeen>> {
    Ok(sqlx::query!(
        r#"SELECT event_type, count(*) AS "seen!", max(created_at) AS "last: DateTime<Utc>",
                (SELECT data::text FROM events e2 WHERE e2.project_id = $1 AND e2.event_type = e.event_type
                   AND e2.erased_at IS NULL ORDER BY created_at DESC LIMIT 1) AS example
         FROM events e WHERE project_id = $1 AND created_at > now() - make_interval(days => $2)
         GROUP BY event_type ORDER BY 2 DESC"#,
        project_id.get(),
        retention_days as i32,
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.event_type, r.seen, r.last, r.example))
    .collect())
}
