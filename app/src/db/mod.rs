//! Data access, one module per table or aggregate. Every function that reads or writes a
//! project's data takes an [`crate::core::permissions::Access`], which only the authorization layer makes.

pub mod alert_mails;
pub mod alert_recipients;
pub mod api_keys;
pub mod audit;
pub mod bins;
pub mod deliveries;
pub mod endpoint_activity;
pub mod endpoint_health;
pub mod endpoints;
pub mod erasures;
pub mod event_reads;
pub mod events;
pub mod filtered;
pub mod group_commit;
pub mod horizon;
pub mod idempotency;
pub mod invitations;
pub mod kept;
pub mod limits;
pub mod listen;
pub mod maintenance;
pub mod memberships;
pub mod notices;
pub mod operator_keys;
pub mod portal;
pub mod projects;
pub mod queue;
pub mod rate_counters;
pub mod replays;
pub mod schemas;
pub mod sealing;
pub mod server_keys;
pub mod signature_schemes;
pub mod targets;
pub mod tenants;
pub mod usage;
pub mod users;
pub mod wakeup;

use crate::error::{AppError, AppResult};
use sqlx::{postgres::PgPoolOptions, PgPool};

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// How long a pooled connection may sit unused and still be handed out without a
/// check. The check is a round trip to the server; done before every statement, as the
/// pool does by default, it was one more round trip (and one more wake-up of a backend)
/// for each of the three or four statements on the way from a request to its send. A
/// connection used this recently is alive or fails its next statement, which closes it;
/// a server restart takes longer than this, so the connections it broke while idle are
/// still checked and replaced before use.
const UNCHECKED_IDLE: std::time::Duration = std::time::Duration::from_secs(1);

/// Pool options every pool of the product shares.
pub fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(std::time::Duration::from_secs(10))
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= UNCHECKED_IDLE {
                    use sqlx::Connection;
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
}

pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool, sqlx::Error> {
    pool_options(max_connections).connect(url).await
}

/// The dispatcher's own pool. Its commits (claims, outcomes) do not wait for the WAL to
/// reach disk: a claim or outcome lost in a database crash only means the attempt is sent
/// again after its lease, which at-least-once delivery allows. Events are ingested through
/// the main pool, durably.
pub async fn connect_dispatcher(url: &str, max_connections: u32) -> Result<PgPool, sqlx::Error> {
    use std::str::FromStr;
    let options =
        sqlx::postgres::PgConnectOptions::from_str(url)?.options([("synchronous_commit", "off")]);
    pool_options(max_connections).connect_with(options).await
}

/// Applies the migrations on a connection of their own whose statements are not logged: a
/// migration is one long statement by design, and sqlx would log it as slow, whole, at
/// WARN (on a first run, the entire schema).
pub async fn migrate(pool: &PgPool) -> Result<(), sqlx::migrate::MigrateError> {
    use sqlx::{ConnectOptions, Connection};
    let options = (*pool.connect_options())
        .clone()
        .disable_statement_logging();
    let mut conn = options.connect().await?;
    let applied = MIGRATOR.run(&mut conn).await;
    let _ = conn.close().await;
    applied
}

/// The outcome of a write aimed at one row of the caller's project: none touched means
/// the row is unknown or not theirs, and the two are never told apart.
pub(crate) fn found(rows_affected: u64) -> AppResult<()> {
    if rows_affected == 0 {
        return Err(AppError::NotFound);
    }
    Ok(())
}
