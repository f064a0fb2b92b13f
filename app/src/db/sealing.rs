//! The sealed columns as a whole: which keys they are sealed with (checked at start, so
//! a process given the wrong key stops with a message instead of failing every
//! delivery) and re-sealing under the current key (plain values when a key is first
//! set, older keys' values on rotation).

use sqlx::PgPool;

use crate::{
    core::sealed::{self, Keyring, StoredValue},
    error::AppResult,
};

/// The sealed values of every endpoint, as (key id, how many).
pub async fn keys_in_use(pool: &PgPool) -> AppResult<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "WITH v(value) AS (
            SELECT secret FROM endpoints
            UNION ALL SELECT previous_secret FROM endpoints WHERE previous_secret IS NOT NULL
            UNION ALL SELECT client_key FROM endpoints WHERE client_key IS NOT NULL
            UNION ALL SELECT signing_key FROM endpoints WHERE signing_key IS NOT NULL
            UNION ALL SELECT h->1->>'sealed' FROM endpoints, jsonb_array_elements(custom_headers) h
                       WHERE jsonb_typeof(h->1) = 'object'
         )
         SELECT split_part(value, ':', 2) AS key, count(*) FROM v
          WHERE value LIKE 'ph1:%' GROUP BY 1 ORDER BY 1",
    )
    .fetch_all(pool)
    .await?)
}

/// Values stored in plain text (no key was set when they were written).
pub async fn plain_values(pool: &PgPool) -> AppResult<i64> {
    Ok(sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM endpoints WHERE secret NOT LIKE 'ph1:%')
              + (SELECT count(*) FROM endpoints WHERE previous_secret NOT LIKE 'ph1:%')
              + (SELECT count(*) FROM endpoints WHERE client_key NOT LIKE 'ph1:%')
              + (SELECT count(*) FROM endpoints WHERE signing_key NOT LIKE 'ph1:%')
              + (SELECT count(*) FROM endpoints, jsonb_array_elements(custom_headers) h
                  WHERE jsonb_typeof(h->1) = 'string')",
    )
    .fetch_one(pool)
    .await?)
}

/// Refuses (with a message for the operator) when some value is sealed with a key this
/// process does not hold: every process of a deployment must share the key.
pub async fn check(pool: &PgPool, keyring: Option<&Keyring>) -> Result<(), String> {
    let used = keys_in_use(pool)
        .await
        .map_err(|e| format!("cannot read the sealed values: {e}"))?;
    let missing: Vec<String> = used
        .into_iter()
        .filter(|(id, _)| !keyring.is_some_and(|k| k.holds(id)))
        .map(|(id, n)| format!("{n} sealed with key {id}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the database holds secrets this process cannot open ({}); set POSTHORN_ENCRYPTION_KEY to the key(s) every other process of this deployment uses",
        missing.join(", ")
    ))
}

#[derive(Debug, Default, PartialEq, serde::Serialize)]
pub struct Resealed {
    /// Endpoints rewritten.
    pub endpoints: u64,
    /// Values sealed anew (secrets, header values, client keys).
    pub values: u64,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    secret: String,
    previous_secret: Option<String>,
    client_key: Option<String>,
    signing_key: Option<String>,
    custom_headers: sqlx::types::Json<Vec<(String, StoredValue)>>,
}

/// Seals every value that is plain or sealed with another key under `keyring`'s current
/// key, a batch of endpoints per statement. Each row is rewritten only if it still holds
/// what was read (a change made meanwhile was sealed with the current key anyway), so it
/// runs safely beside serving processes.
pub async fn reseal(pool: &PgPool, keyring: &Keyring) -> AppResult<Resealed> {
    let current = format!("ph1:{}:%", keyring.current_id());
    let mut done = Resealed::default();
    let mut after = 0i64;
    loop {
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT id, secret, previous_secret, client_key, signing_key, custom_headers
               FROM endpoints
              WHERE id > $1 AND (secret NOT LIKE $2 OR previous_secret NOT LIKE $2
                 OR client_key NOT LIKE $2 OR signing_key NOT LIKE $2
                 OR EXISTS (SELECT 1 FROM jsonb_array_elements(custom_headers) h
                             WHERE coalesce(h->1->>'sealed', '') NOT LIKE $2))
              ORDER BY id LIMIT 200",
        )
        .bind(after)
        .bind(&current)
        .fetch_all(pool)
        .await?;
        let Some(last) = rows.last() else {
            return Ok(done);
        };
        after = last.id;
        for row in rows {
            let mut values = 0u64;
            let mut again = |purpose: &str, stored: &str, plain: bool| {
                let current = !plain && sealed::key_id(stored) == Some(keyring.current_id());
                if current {
                    return Ok::<_, sealed::SealError>(stored.to_string());
                }
                values += 1;
                let text = if plain {
                    stored.to_string()
                } else {
                    keyring.open(purpose, stored)?
                };
                Ok(keyring.seal(purpose, &text))
            };
            let secret = again(sealed::ENDPOINT_SECRET, &row.secret, false)?;
            let previous = row
                .previous_secret
                .as_deref()
                .map(|s| again(sealed::ENDPOINT_SECRET, s, false))
                .transpose()?;
            let client_key = row
                .client_key
                .as_deref()
                .map(|s| again(sealed::CLIENT_KEY, s, false))
                .transpose()?;
            let signing_key = row
                .signing_key
                .as_deref()
                .map(|s| again(sealed::SIGNING_KEY, s, false))
                .transpose()?;
            let mut headers = Vec::with_capacity(row.custom_headers.0.len());
            for (name, value) in &row.custom_headers.0 {
                // A plain header value is sealed whatever it looks like.
                let sealed = match value {
                    StoredValue::Plain(v) => again(sealed::HEADER_VALUE, v, true)?,
                    StoredValue::Sealed { sealed } => again(sealed::HEADER_VALUE, sealed, false)?,
                };
                headers.push((name.clone(), StoredValue::Sealed { sealed }));
            }
            let changed = sqlx::query(
                "UPDATE endpoints SET secret = $2, previous_secret = $3, client_key = $4,
                        custom_headers = $5, signing_key = $10
                  WHERE id = $1 AND secret = $6 AND previous_secret IS NOT DISTINCT FROM $7
                    AND client_key IS NOT DISTINCT FROM $8 AND custom_headers = $9
                    AND signing_key IS NOT DISTINCT FROM $11",
            )
            .bind(row.id)
            .bind(&secret)
            .bind(&previous)
            .bind(&client_key)
            .bind(sqlx::types::Json(&headers))
            .bind(&row.secret)
            .bind(&row.previous_secret)
            .bind(&row.client_key)
            .bind(&row.custom_headers)
            .bind(&signing_key)
            .bind(&row.signing_key)
            .execute(pool)
            .await?
            .rows_affected();
            if changed == 1 {
                done.endpoints += 1;
                done.values += values;
            }
        }
    }
}
