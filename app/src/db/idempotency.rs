//! Idempotency keys in their stored form (see [`crate::core::idempotency`]), under the
//! `idempotency` server key, read once per process and database.

use crate::core::ProjectId;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use sqlx::PgPool;

use crate::{core::idempotency::stored_key, error::AppResult};

const SERVER_KEY: &str = "idempotency";

/// By database (a test process serves many), the key read from it.
static KEYS: Mutex<Option<HashMap<String, Arc<Vec<u8>>>>> = Mutex::new(None);

async fn server_key(pool: &PgPool) -> AppResult<Arc<Vec<u8>>> {
    let options = pool.connect_options();
    let database = format!(
        "{}:{}/{}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or_default()
    );
    let kept = |keys: &mut Option<HashMap<_, Arc<Vec<u8>>>>| {
        keys.get_or_insert_with(HashMap::new)
            .get(&database)
            .cloned()
    };
    if let Some(key) = kept(&mut KEYS.lock().unwrap_or_else(|p| p.into_inner())) {
        return Ok(key);
    }
    let key = Arc::new(super::server_keys::get_or_create(pool, SERVER_KEY).await?);
    KEYS.lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(database, key.clone());
    Ok(key)
}

/// The stored form of each key given (None stays None); reads nothing when none is given.
pub async fn stored_keys(
    pool: &PgPool,
    project_id: ProjectId,
    keys: &[Option<&str>],
) -> AppResult<Vec<Option<String>>> {
    if keys.iter().all(Option::is_none) {
        return Ok(vec![None; keys.len()]);
    }
    let server = server_key(pool).await?;
    Ok(keys
        .iter()
        .map(|k| k.map(|k| stored_key(&server, project_id, k)))
        .collect())
}
