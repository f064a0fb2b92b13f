//! What the endpoint cards show about the last 24 hours: attempts and successes per hour,
//! the 95th percentile of durations, and failures grouped by what went wrong.

use crate::core::ProjectId;
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
pub async fn last_day(pool: &PgPool, project_id: ProjectId) -> AppResult<Activity> {
    let hourly = sqlx::query!(
        r#"SELECT endpoint_id AS "endpoint_id!",
                (extract(epoch FROM now() - created_at) / 3600)::int AS "hour!",
                count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'dead_letter')) AS "finished!",
                count(*) FILTER (WHERE status = 'succeeded') AS "succeeded!"
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours' AND trigger <> 'redirect'
         GROUP BY 1, 2"#,
        project_id.get(),
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.endpoint_id, r.hour, r.finished, r.succeeded))
    .collect();
    let p95 = sqlx::query!(
        r#"SELECT endpoint_id AS "endpoint_id!",
                percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours'
           AND trigger <> 'redirect' AND duration_ms IS NOT NULL GROUP BY 1"#,
        project_id.get(),
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.endpoint_id, r.p95))
    .collect();
    let failures = sqlx::query!(
        r#"SELECT endpoint_id AS "endpoint_id!",
                coalesce(response_status::text, error_kind, 'unknown') AS "what!", count(*) AS "n!"
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours'
           AND trigger <> 'redirect' AND status IN ('failed', 'dead_letter')
         GROUP BY 1, 2 ORDER BY 3 DESC"#,
        project_id.get(),
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.endpoint_id, r.what, r.n))
    .collect();
    Ok(Activity {
        hourly,
        p95,
        failures,
    })
}

/// Endpoints of the project that were disabled automatically: (id, url, reason).
pub async fn auto_disabled(
    pool: &PgPool,
    project_id: ProjectId,
) -> AppResult<Vec<(i64, String, String)>> {
    Ok(sqlx::query!(
        r#"SELECT id, url, disabled_reason AS "disabled_reason!" FROM endpoints
         WHERE project_id = $1 AND NOT enabled AND deleted_at IS NULL AND disabled_reason LIKE 'auto:%'"#,
        project_id.get(),
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.id, r.url, r.disabled_reason))
    .collect())
}
