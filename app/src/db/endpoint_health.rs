//! What recorded outcomes tell about endpoints, kept as they are written: whether an
//! endpoint is failing (the first failure since its last success) and its dead letters
//! not yet told. The alert loop ([`super::notices`]) reads both.

use crate::core::{EndpointId, EventId};
use chrono::{DateTime, Utc};
use sqlx::PgConnection;

/// One endpoint's latest outcome in a batch: succeeded, or failed since `first_failure`.
#[derive(Clone, Debug, PartialEq)]
pub struct Health {
    pub endpoint_id: EndpointId,
    pub ok: bool,
    pub first_failure: DateTime<Utc>,
}

/// Writes only the endpoints whose state changes (a success after failures, a first
/// failure), locking them in id order so concurrent writers never deadlock.
pub async fn note(conn: &mut PgConnection, health: &[Health]) -> Result<u64, sqlx::Error> {
    if health.is_empty() {
        return Ok(0);
    }
    let ids: Vec<EndpointId> = health.iter().map(|h| h.endpoint_id).collect();
    let ok: Vec<bool> = health.iter().map(|h| h.ok).collect();
    let first: Vec<DateTime<Utc>> = health.iter().map(|h| h.first_failure).collect();
    Ok(sqlx::query!(
        "WITH h AS (SELECT * FROM unnest($1::bigint[], $2::bool[], $3::timestamptz[]) AS h(id, ok, first_failure)),
         changing AS (
            SELECT e.id FROM endpoints e JOIN h ON h.id = e.id
             WHERE (h.ok AND e.failing_since IS NOT NULL) OR (NOT h.ok AND e.failing_since IS NULL)
             -- Never wait for a row someone else holds (a tenant disabling its endpoint
             -- parks its whole backlog under that lock): every tenant's outcomes go through
             -- this writer. The next outcome of that endpoint notes its health.
             ORDER BY e.id FOR NO KEY UPDATE OF e SKIP LOCKED
         )
         UPDATE endpoints e
            SET failing_since = CASE WHEN h.ok THEN NULL ELSE coalesce(e.failing_since, h.first_failure) END
           FROM h JOIN changing c ON c.id = h.id
          WHERE e.id = h.id",
        &ids as _,
        &ok,
        &first as _,
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// Adds dead letters to their endpoints' tallies: `(endpoint, event id)` pairs.
pub async fn tally_dead_letters(
    conn: &mut PgConnection,
    dead: &[(EndpointId, EventId)],
) -> Result<(), sqlx::Error> {
    if dead.is_empty() {
        return Ok(());
    }
    let mut by_endpoint: std::collections::BTreeMap<EndpointId, Vec<String>> = Default::default();
    for (endpoint, event) in dead {
        by_endpoint
            .entry(*endpoint)
            .or_default()
            .push(event.to_string());
    }
    let ids: Vec<EndpointId> = by_endpoint.keys().copied().collect();
    let counts: Vec<i64> = by_endpoint.values().map(|v| v.len() as i64).collect();
    // Arrays of arrays must be rectangular: the first few ids as one text each.
    let firsts: Vec<String> = by_endpoint
        .values()
        .map(|v| v[..v.len().min(super::notices::FIRST_IDS)].join(","))
        .collect();
    sqlx::query!(
        "INSERT INTO dead_letter_tally AS t (endpoint_id, count, first_ids)
         SELECT id, n, string_to_array(f, ',') FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS x(id, n, f)
         ORDER BY id
         ON CONFLICT (endpoint_id) DO UPDATE
            SET count = t.count + excluded.count,
                first_ids = (t.first_ids || excluded.first_ids)[1:$4]",
        &ids as _,
        &counts,
        &firsts,
        super::notices::FIRST_IDS as i32,
    )
    .execute(conn)
    .await?;
    Ok(())
}
