//! Keys the installation's processes share through the database: made once, at random,
//! by whichever process needs one first.

use rand::RngCore;
use sqlx::PgPool;

use crate::error::AppResult;

/// Signs the passes of the dispatcher's own deliveries to inspector bins.
pub const DISPATCH: &str = "dispatch";

/// The key called `name`, made now if there is none yet.
pub async fn get_or_create(pool: &PgPool, name: &str) -> AppResult<Vec<u8>> {
    let mut fresh = vec![0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut fresh);
    // Two processes making it at once: the first insert wins, and both read that one.
    sqlx::query!(
        "INSERT INTO server_keys (name, key) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        name,
        &fresh,
    )
    .execute(pool)
    .await?;
    Ok(
        sqlx::query_scalar!("SELECT key FROM server_keys WHERE name = $1", name)
            .fetch_one(pool)
            .await?,
    )
}

/// The key called `name`, if one was made.
pub async fn get(pool: &PgPool, name: &str) -> AppResult<Option<Vec<u8>>> {
    Ok(
        sqlx::query_scalar!("SELECT key FROM server_keys WHERE name = $1", name)
            .fetch_optional(pool)
            .await?,
    )
}
