//! What a project used, per UTC day: events accepted and attempts finished by status,
//! from the counters the database keeps apart from the delivery log (see the
//! `operator_and_portal` migration), so retention and deletion leave them whole.

use crate::core::ProjectId;
use chrono::NaiveDate;
use sqlx::PgPool;

use crate::error::AppResult;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DayUsage {
    pub day: NaiveDate,
    pub events: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub dead_letter: i64,
}

/// The days from `since` to `until` (both included) that saw any use, oldest first.
pub async fn between(
    pool: &PgPool,
    project_id: ProjectId,
    since: NaiveDate,
    until: NaiveDate,
) -> AppResult<Vec<DayUsage>> {
    Ok(sqlx::query_as!(
        DayUsage,
        r#"WITH a AS (
            SELECT day,
                   sum(attempts) FILTER (WHERE status = 'succeeded') AS succeeded,
                   sum(attempts) FILTER (WHERE status = 'failed') AS failed,
                   sum(attempts) FILTER (WHERE status = 'dead_letter') AS dead_letter
              FROM usage_attempts WHERE project_id = $1 AND day BETWEEN $2 AND $3 GROUP BY day),
         e AS (SELECT day, sum(events)::bigint AS events FROM usage_events
               WHERE project_id = $1 AND day BETWEEN $2 AND $3 GROUP BY day)
         SELECT coalesce(e.day, a.day) AS "day!: NaiveDate", coalesce(e.events, 0) AS "events!",
                coalesce(a.succeeded, 0)::bigint AS "succeeded!",
                coalesce(a.failed, 0)::bigint AS "failed!",
                coalesce(a.dead_letter, 0)::bigint AS "dead_letter!"
           FROM e FULL JOIN a ON a.day = e.day
          ORDER BY 1"#,
        project_id.get(),
        since as _,
        until as _,
    )
    .fetch_all(pool)
    .await?)
}
