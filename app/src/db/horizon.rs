//! The commit horizon: the instant before which no row can still appear, which lets a
//! cursor over `created_at` return every row exactly once.

use chrono::{DateTime, Utc};

use crate::error::AppResult;

/// The time before which no row can still appear. A row's `created_at` is its
/// transaction's start time, so rows from transactions still open are at or after the
/// oldest open transaction's start; everything before that is final.
pub async fn commit_horizon(conn: &mut sqlx::PgConnection) -> AppResult<DateTime<Utc>> {
    Ok(sqlx::query_scalar!(
        r#"SELECT least(statement_timestamp(), coalesce(min(xact_start), statement_timestamp()))
                  AS "horizon!: DateTime<Utc>"
         FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND backend_type = 'client backend' AND xact_start IS NOT NULL"#,
    )
    .fetch_one(conn)
    .await?)
}
