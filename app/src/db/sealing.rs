//! The sealed columns as a whole: which keys they are sealed with (checked at start, so
//! a process given the wrong key stops with a message instead of failing every
//! delivery), whether this database has ever been sealed (the `sealing` row, see its
//! migration), and re-sealing under the current key, bound to each value's endpoint.
//!
//! Re-sealing takes in plain values only until the database is marked sealed (they were
//! written before any key was set), and values of the earlier `ph1:` format only until
//! every value has been bound once: after that, either kind could have been written
//! there by anyone able to write a row, so it stays refused.

use crate::core::{EndpointId, ProjectId};
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::{
    core::sealed::{self, Accept, Keyring, Purpose, SealError, StoredValue},
    error::AppResult,
};

// Both read every secret value of every endpoint as one SQL set of `value`, header values
// stored sealed included (plain ones have their own JSON type: whatever they read, they
// were never sealed).

/// The sealed values of every endpoint, as (key id, how many).
pub async fn keys_in_use(pool: &PgPool) -> AppResult<Vec<(String, i64)>> {
    Ok(sqlx::query!(
        r#"SELECT split_part(value, ':', 2) AS "key!", count(*) AS "n!" FROM (
              SELECT secret AS value FROM endpoints
                UNION ALL SELECT previous_secret FROM endpoints WHERE previous_secret IS NOT NULL
                UNION ALL SELECT client_key FROM endpoints WHERE client_key IS NOT NULL
                UNION ALL SELECT signing_key FROM endpoints WHERE signing_key IS NOT NULL
                UNION ALL SELECT destination_credentials FROM endpoints WHERE destination_credentials IS NOT NULL
                UNION ALL SELECT h->1->>'sealed' FROM endpoints, jsonb_array_elements(custom_headers) h
                           WHERE jsonb_typeof(h->1) = 'object') v
          WHERE value ~ '^ph[12]:' GROUP BY 1 ORDER BY 1"#
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.key, r.n))
    .collect())
}

/// Values not sealed bound to their endpoint: plain ones and the earlier format's.
pub async fn unbound_values(pool: &PgPool) -> AppResult<i64> {
    Ok(sqlx::query_scalar!(
        r#"SELECT (SELECT count(*) FROM (
              SELECT secret AS value FROM endpoints
                UNION ALL SELECT previous_secret FROM endpoints WHERE previous_secret IS NOT NULL
                UNION ALL SELECT client_key FROM endpoints WHERE client_key IS NOT NULL
                UNION ALL SELECT signing_key FROM endpoints WHERE signing_key IS NOT NULL
                UNION ALL SELECT destination_credentials FROM endpoints WHERE destination_credentials IS NOT NULL
                UNION ALL SELECT h->1->>'sealed' FROM endpoints, jsonb_array_elements(custom_headers) h
                           WHERE jsonb_typeof(h->1) = 'object') v
             WHERE value !~ '^ph2:')
              + (SELECT count(*) FROM endpoints, jsonb_array_elements(custom_headers) h
                  WHERE jsonb_typeof(h->1) = 'string') AS "n!""#
    )
    .fetch_one(pool)
    .await?)
}

/// What the database says about sealing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct State {
    /// Since when a process with a key has run against it (None: never, local use).
    pub sealed_since: Option<DateTime<Utc>>,
    /// Since when every value has been bound to its endpoint once.
    pub bound_since: Option<DateTime<Utc>>,
}

impl State {
    /// What re-sealing may still take in.
    pub fn accept(&self) -> Accept {
        Accept {
            plain: self.sealed_since.is_none(),
            unbound: self.bound_since.is_none(),
        }
    }
}

pub async fn state(pool: &PgPool) -> AppResult<State> {
    let row = sqlx::query!(
        r#"SELECT sealed_since AS "sealed_since: DateTime<Utc>",
                  bound_since AS "bound_since: DateTime<Utc>" FROM sealing"#
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map_or(State::default(), |r| State {
        sealed_since: Some(r.sealed_since),
        bound_since: r.bound_since,
    }))
}

/// Marks the database sealed, and with `bound` every value bound (neither is undone).
async fn mark(pool: &PgPool, bound: bool) -> AppResult<()> {
    sqlx::query!(
        "INSERT INTO sealing (bound_since) VALUES (CASE WHEN $1 THEN now() END)
         ON CONFLICT (only_row) DO UPDATE
            SET bound_since = coalesce(sealing.bound_since, excluded.bound_since)",
        bound,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Refuses (with a message for the operator) a process that cannot keep the database as
/// it is: one without a key against a database a keyed process has run on (it would
/// write secrets in plain text beside sealed ones), or one lacking a key that sealed some
/// value (every process of a deployment must share the key).
pub async fn check(pool: &PgPool, keyring: Option<&Keyring>) -> Result<(), String> {
    let unreadable = |e| format!("cannot read the sealed values: {e}");
    let state = state(pool).await.map_err(unreadable)?;
    if let (None, Some(since)) = (keyring, state.sealed_since) {
        return Err(format!(
            "POSTHORN_ENCRYPTION_KEY is unset, but this database's secrets have been sealed since {since}: set it to the key(s) every other process of this deployment uses (without it, secrets would be stored in plain text beside sealed ones)"
        ));
    }
    let used = keys_in_use(pool).await.map_err(unreadable)?;
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

/// What a keyed process does at start: until the database is marked sealed and bound, a
/// [`reseal`] takes in what is plain or of the earlier format (values written before
/// this version, or before any key). Returns what it re-sealed, if it ran.
pub async fn settle(pool: &PgPool, keyring: &Keyring) -> AppResult<Option<Resealed>> {
    let state = state(pool).await?;
    if state.accept() == Accept::default() {
        return Ok(None);
    }
    Ok(Some(reseal(pool, keyring).await?))
}

#[derive(Debug, Default, PartialEq, serde::Serialize)]
pub struct Resealed {
    /// Endpoints rewritten.
    pub endpoints: u64,
    /// Values sealed anew (secrets, header values, client keys).
    pub values: u64,
    /// Values left as they were: plain or of the earlier format where those are no
    /// longer taken in, or not opening at all. Each is refused where it is used.
    pub refused: u64,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    project_id: ProjectId,
    secret: String,
    previous_secret: Option<String>,
    client_key: Option<String>,
    signing_key: Option<String>,
    destination_credentials: Option<String>,
    custom_headers: sqlx::types::Json<Vec<(String, StoredValue)>>,
}

/// Seals every value not yet sealed under `keyring`'s current key bound to its endpoint,
/// a batch of endpoints per statement, taking in what the database's [`State`] still
/// allows; then marks the database sealed and, after a pass that took in the earlier
/// format, bound. Each row is rewritten only if it still holds what was read (a change
/// made meanwhile was sealed with the current key anyway), so it runs safely beside
/// serving processes. A key it does not hold stops it.
pub async fn reseal(pool: &PgPool, keyring: &Keyring) -> AppResult<Resealed> {
    let accept = state(pool).await?.accept();
    let current = format!("ph2:{}:%", keyring.current_id());
    let mut done = Resealed::default();
    let mut after = 0i64;
    loop {
        let rows = sqlx::query_as!(
            Row,
            r#"SELECT id, project_id, secret, previous_secret, client_key, signing_key,
                    destination_credentials,
                    custom_headers AS "custom_headers: sqlx::types::Json<Vec<(String, StoredValue)>>"
               FROM endpoints
              WHERE id > $1 AND (secret NOT LIKE $2 OR previous_secret NOT LIKE $2
                 OR client_key NOT LIKE $2 OR signing_key NOT LIKE $2
                 OR destination_credentials NOT LIKE $2
                 OR EXISTS (SELECT 1 FROM jsonb_array_elements(custom_headers) h
                             WHERE coalesce(h->1->>'sealed', '') NOT LIKE $2))
              ORDER BY id LIMIT 200"#,
            after,
            &current,
        )
        .fetch_all(pool)
        .await?;
        let Some(last) = rows.last() else {
            break;
        };
        after = last.id;
        for row in rows {
            let (values, refused) = reseal_row(pool, keyring, accept, &row).await?;
            done.refused += refused;
            if let Some(values) = values {
                done.endpoints += 1;
                done.values += values;
            }
        }
    }
    mark(pool, accept.unbound).await?;
    Ok(done)
}

/// One endpoint's values sealed anew: (values re-sealed if the row was rewritten, values
/// refused).
async fn reseal_row(
    pool: &PgPool,
    keyring: &Keyring,
    accept: Accept,
    row: &Row,
) -> AppResult<(Option<u64>, u64)> {
    let (mut values, mut refused) = (0u64, 0u64);
    // The value sealed anew, or None to leave it as it is (current, or refused).
    let mut again = |purpose: Purpose, stored: &str, plain: bool| {
        if !plain && sealed::is_bound_with(stored, keyring.current_id()) {
            return Ok(None);
        }
        let slot = purpose.of(row.project_id, EndpointId::new(row.id));
        // A plain header value has its own JSON type: taken as plain whatever it reads.
        let opened = match (plain, accept.plain) {
            (true, true) => Ok(stored.to_string()),
            (true, false) => Err(SealError::Plain),
            (false, _) => keyring.open_accepting(slot, stored, accept),
        };
        match opened {
            Ok(text) => {
                values += 1;
                Ok(Some(keyring.seal(slot, &text)))
            }
            Err(e @ SealError::UnknownKey(_)) => Err(e),
            Err(_) => {
                refused += 1;
                Ok(None)
            }
        }
    };
    let secret =
        again(sealed::ENDPOINT_SECRET, &row.secret, false)?.unwrap_or_else(|| row.secret.clone());
    let mut column = |purpose, stored: &Option<String>| -> Result<_, SealError> {
        Ok(match stored.as_deref() {
            Some(s) => Some(again(purpose, s, false)?.unwrap_or_else(|| s.to_string())),
            None => None,
        })
    };
    let previous = column(sealed::ENDPOINT_SECRET, &row.previous_secret)?;
    let client_key = column(sealed::CLIENT_KEY, &row.client_key)?;
    let signing_key = column(sealed::SIGNING_KEY, &row.signing_key)?;
    let credentials = column(
        sealed::DESTINATION_CREDENTIALS,
        &row.destination_credentials,
    )?;
    let mut headers = Vec::with_capacity(row.custom_headers.0.len());
    for (name, value) in &row.custom_headers.0 {
        let (stored, plain) = match value {
            StoredValue::Plain(v) => (v, true),
            StoredValue::Sealed { sealed } => (sealed, false),
        };
        let kept = match again(sealed::HEADER_VALUE, stored, plain)? {
            Some(sealed) => StoredValue::Sealed { sealed },
            None => value.clone(),
        };
        headers.push((name.clone(), kept));
    }
    if values == 0 {
        return Ok((None, refused));
    }
    let changed = sqlx::query!(
        "UPDATE endpoints SET secret = $2, previous_secret = $3, client_key = $4,
                custom_headers = $5, signing_key = $10, destination_credentials = $12
          WHERE id = $1 AND secret = $6 AND previous_secret IS NOT DISTINCT FROM $7
            AND client_key IS NOT DISTINCT FROM $8 AND custom_headers = $9
            AND signing_key IS NOT DISTINCT FROM $11
            AND destination_credentials IS NOT DISTINCT FROM $13",
        row.id,
        &secret,
        previous.as_deref(),
        client_key.as_deref(),
        sqlx::types::Json(&headers) as _,
        &row.secret,
        row.previous_secret.as_deref(),
        row.client_key.as_deref(),
        &row.custom_headers as _,
        signing_key.as_deref(),
        row.signing_key.as_deref(),
        credentials.as_deref(),
        row.destination_credentials.as_deref(),
    )
    .execute(pool)
    .await?
    .rows_affected();
    Ok(((changed == 1).then_some(values), refused))
}
