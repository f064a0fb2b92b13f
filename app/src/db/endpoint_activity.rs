//! What the endpoint cards show about the last 24 hours: attempts and successes per hour,
//! the 95th percentile of durations, and failures grouped by what went wrong.

use sqlx::PgPool;

use crate::error::AppResult;

/// The project's last 24 hours, per endpoint (redirects to bins left out).
pub struct Activity {
    /// (endpoint, hours ago, finished attempts, succeeded)
    pub hourly: Vec<(i64, i32, i64, i64)>,
    /// (endpoint, p95 of duration in ms)
    pub p95: Vec<(i64, Option<f64>)>,
    /// (endpoint, response code or error kind, count), most frequent first
    pub failures: Vec<(i64, String, i64)>,
}

/// `project_id` comes from an `Access` the caller holds (this module stays below `auth`,
/// which reads [`auto_disabled`]).
pub async fn last_day(pool: &PgPool, project_id: i64) -> AppResult<Activity> {
    let hourly = sqlx::query_as(
        "SELECT endpoint_id, (extract(epoch FROM now() - created_at) / 3600)::int AS hour,
                count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'dead_letter')),
                count(*) FILTER (WHERE status = 'succeeded')
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours' AND trigger <> 'redirect'
         GROUP BY 1, 2",
    )
    .bind(project_id)
    .fetch_all(pool)
    .await?;
    let p95 = sqlx::query_as(
        "SELECT endpoint_id, percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms)
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours'
           AND trigger <> 'redirect' AND duration_ms IS NOT NULL GROUP BY 1",
    )
    .bind(project_id)
    .fetch_all(pool)
    .await?;
    let failures = sqlx::query_as(
        "SELECT endpoint_id, coalesce(response_status::text, error_kind, 'unknown'), count(*)
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours'
           AND trigger <> 'redirect' AND status IN ('failed', 'dead_letter')
         GROUP BY 1, 2 ORDER BY 3 DESC",
    )
    .bind(project_id)
    .fetch_all(pool)
    .await?;
    Ok(Activity {
        hourly,
        p95,
        failures,
    })
}

/// Endpoints of the project that were disabled automatically: (id, url, reason).
pub async fn auto_disabled(
    pool: &PgPool,
    project_id: i64,
) -> AppResult<Vec<(i64, String, String)>> {
    Ok(sqlx::query_as(
        "SELECT id, url, disabled_reason FROM endpoints
         WHERE project_id = $1 AND NOT enabled AND deleted_at IS NULL AND disabled_reason LIKE 'auto:%'",
    )
    .bind(project_id)
    .fetch_all(pool)
    .await?)
}
