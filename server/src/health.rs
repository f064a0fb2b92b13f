//! Probes for an orchestrator, beside `/healthz` (the database answers):
//! - `/livez`: the process serves HTTP. It never touches the database, so a database
//!   outage does not get every server restarted (liveness), it only takes them out of
//!   the load balancer (readiness).
//! - `/readyz`: the database answers within 2 s and holds every migration this binary
//!   was built with, applied whole and unchanged. Migrations newer than the binary are
//!   allowed: during a rolling upgrade the old servers keep serving once the new schema
//!   is in, which is what an additive migration is for (docs: Operations, upgrades).

use std::{collections::HashMap, time::Duration};

use axum::{extract::State, http::StatusCode, response::IntoResponse, routing::get, Json, Router};
use serde_json::json;
use sqlx::PgPool;

use crate::state::AppState;

/// A probe that waits longer than its orchestrator's timeout is a failure anyway.
const DATABASE_WAIT: Duration = Duration::from_secs(2);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
}

/// A migration as the database recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub version: i64,
    pub success: bool,
    pub checksum: Vec<u8>,
}

/// How the database's migrations stand against this binary's.
#[derive(Debug, Default, PartialEq)]
pub struct Migrations {
    /// The binary's migrations not (successfully) applied yet.
    pub pending: Vec<i64>,
    /// Applied with other contents than the binary's.
    pub changed: Vec<i64>,
    /// Applied migrations this binary does not know (a newer release's).
    pub newer: Vec<i64>,
}

impl Migrations {
    pub fn current(&self) -> bool {
        self.pending.is_empty() && self.changed.is_empty()
    }
}

/// Compares the binary's migrations, `(version, checksum)`, with the database's.
pub fn compare(known: &[(i64, Vec<u8>)], applied: &[Applied]) -> Migrations {
    let by_version: HashMap<i64, &Applied> = applied.iter().map(|a| (a.version, a)).collect();
    let mut out = Migrations::default();
    for (version, checksum) in known {
        match by_version.get(version) {
            Some(a) if a.success && a.checksum == *checksum => {}
            Some(a) if a.success => out.changed.push(*version),
            _ => out.pending.push(*version),
        }
    }
    out.newer = applied
        .iter()
        .filter(|a| !known.iter().any(|(v, _)| *v == a.version))
        .map(|a| a.version)
        .collect();
    out
}

fn known_migrations() -> Vec<(i64, Vec<u8>)> {
    app::db::MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| (m.version, m.checksum.to_vec()))
        .collect()
}

async fn applied(pool: &PgPool) -> Result<Vec<Applied>, sqlx::Error> {
    // A database nothing was applied to yet has no table: everything is pending.
    let rows: Vec<(i64, bool, Vec<u8>)> =
        sqlx::query_as("SELECT version, success, checksum FROM _sqlx_migrations")
            .fetch_all(pool)
            .await
            .or_else(|e| match e {
                sqlx::Error::Database(d) if d.code().as_deref() == Some("42P01") => Ok(Vec::new()),
                e => Err(e),
            })?;
    Ok(rows
        .into_iter()
        .map(|(version, success, checksum)| Applied {
            version,
            success,
            checksum,
        })
        .collect())
}

async fn readyz(State(pool): State<PgPool>) -> impl IntoResponse {
    let found = tokio::time::timeout(DATABASE_WAIT, applied(&pool)).await;
    let rows = match found {
        Ok(Ok(rows)) => rows,
        Ok(Err(e)) => return unready(format!("database unavailable: {e}")),
        Err(_) => {
            return unready(format!(
                "database unavailable: no answer in {DATABASE_WAIT:?}"
            ))
        }
    };
    let m = compare(&known_migrations(), &rows);
    let status = if m.current() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "ready": m.current(),
        "database": "ok",
        "migrations": { "pending": m.pending, "changed": m.changed, "newer": m.newer },
    });
    (status, Json(body))
}

fn unready(reason: String) -> (StatusCode, Json<serde_json::Value>) {
    let body = json!({ "ready": false, "database": reason });
    (StatusCode::SERVICE_UNAVAILABLE, Json(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(version: i64, success: bool, checksum: &[u8]) -> Applied {
        Applied {
            version,
            success,
            checksum: checksum.to_vec(),
        }
    }

    #[test]
    fn current_when_every_known_migration_is_applied_whole() {
        let known = vec![(1, vec![1]), (2, vec![2])];
        let m = compare(&known, &[applied(1, true, &[1]), applied(2, true, &[2])]);
        assert!(m.current(), "{m:?}");
    }

    #[test]
    fn a_newer_release_s_migrations_leave_an_older_server_ready() {
        let known = vec![(1, vec![1])];
        let m = compare(&known, &[applied(1, true, &[1]), applied(2, true, &[2])]);
        assert!(m.current());
        assert_eq!(m.newer, vec![2]);
    }

    #[test]
    fn missing_failed_or_changed_migrations_are_not_current() {
        let known = vec![(1, vec![1]), (2, vec![2]), (3, vec![3])];
        let m = compare(&known, &[applied(1, true, &[9]), applied(2, false, &[2])]);
        assert!(!m.current());
        assert_eq!(m.pending, vec![2, 3]);
        assert_eq!(m.changed, vec![1]);
        assert!(compare(&known, &[]).pending.len() == 3);
    }

    #[test]
    fn the_binary_knows_its_migrations() {
        assert!(known_migrations().len() > 10);
    }
}
