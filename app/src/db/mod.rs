//! Data access, one module per table or aggregate. Every function that reads or writes a
//! project's data takes an [`crate::auth::Access`], which only the authorization layer makes.

pub mod api_keys;
pub mod audit;
pub mod bins;
pub mod deliveries;
pub mod endpoints;
pub mod events;
pub mod maintenance;
pub mod projects;
pub mod rate_counters;
pub mod users;

use sqlx::{postgres::PgPoolOptions, PgPool};

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(std::time::Duration::from_secs(10))
        .connect(url)
        .await
}

pub async fn migrate(pool: &PgPool) -> Result<(), sqlx::migrate::MigrateError> {
    MIGRATOR.run(pool).await
}
