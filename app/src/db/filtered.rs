//! What the endpoints page shows of filters: the recent events filters kept out (read
//! from what fan-out recorded), and recent events to try a filter on.

use crate::core::{EventId, ProjectId};
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::targets::Skipped;
use crate::error::AppResult;

/// The newest events a page looks through for kept-out ones: a bounded read whatever
/// the project's volume.
pub const LOOKED_THROUGH: i64 = 1_000;

/// An event some filter kept out, with the endpoints it skipped and why.
#[derive(sqlx::FromRow)]
pub struct KeptOut {
    pub event_id: EventId,
    pub event_type: String,
    pub created_at: DateTime<Utc>,
    pub filtered_out: sqlx::types::Json<Vec<Skipped>>,
}

/// Among the project's newest [`LOOKED_THROUGH`] events within `days`, those some filter
/// kept out, newest first.
pub async fn kept_out(pool: &PgPool, project_id: ProjectId, days: u32) -> AppResult<Vec<KeptOut>> {
    Ok(sqlx::query_as!(
        KeptOut,
        r#"SELECT event_id AS "event_id!", event_type AS "event_type!", created_at AS "created_at!: DateTime<Utc>",
                  filtered_out AS "filtered_out!: sqlx::types::Json<Vec<Skipped>>" FROM (
            SELECT event_id, event_type, created_at, filtered_out FROM events
             WHERE project_id = $1 AND created_at > now() - make_interval(days => $2)
             ORDER BY created_at DESC LIMIT $3) newest
         WHERE filtered_out IS NOT NULL ORDER BY created_at DESC"#,
        project_id.get(),
        days as i32,
        LOOKED_THROUGH,
    )
    .fetch_all(pool)
    .await?)
}

/// An event to try a filter on.
#[derive(sqlx::FromRow)]
pub struct Recent {
    pub event_id: EventId,
    pub event_type: String,
    pub data: String,
    pub subjects: Option<Vec<String>>,
    pub created_at: DateTime<Utc>,
}

/// The project's newest events of `types` (`*`: any) within `days`, not erased.
pub async fn recent_of_types(
    pool: &PgPool,
    project_id: ProjectId,
    types: &[String],
    days: u32,
    limit: i64,
) -> AppResult<Vec<Recent>> {
    Ok(sqlx::query_as!(
        Recent,
        r#"SELECT event_id, event_type, data::text AS "data!", subjects,
                  created_at AS "created_at: DateTime<Utc>" FROM events
          WHERE project_id = $1 AND created_at > now() - make_interval(days => $3)
            AND erased_at IS NULL AND ('*' = ANY($2) OR event_type = ANY($2))
          ORDER BY created_at DESC LIMIT $4"#,
        project_id.get(),
        types,
        days as i32,
        limit,
    )
    .fetch_all(pool)
    .await?)
}
