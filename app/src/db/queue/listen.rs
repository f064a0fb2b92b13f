//! A listen session's side of the queue. Its endpoint's waiting attempts are parked
//! (out of the dispatchers' indexes, by the admission trigger), and the session that
//! holds the CLI's connection claims them by endpoint, through the parked rows' index,
//! under the same lease as a dispatcher's claim; its outcomes are recorded by
//! [`super::record`] like any other. What it did not finish goes back parked.

use crate::core::{AttemptId, EndpointId};
use chrono::{DateTime, Utc};

use super::claim::{Claimed, CLAIMED};

/// Claims up to `limit` of the session's due attempts, oldest first: parked rows (how its
/// attempts are queued, test sends too) and unparked ones (a lease that expired hands a
/// row back unparked), never one waiting for its turn in an ordering key's lane. Each
/// kind is a range of an index by endpoint and time (`delivery_queue_parked_due`,
/// `delivery_queue_ready`), so the claim reads `limit` rows of each at most, whatever
/// waits behind them or in other tenants' queues.
pub async fn claim(
    db: impl sqlx::PgExecutor<'_>,
    endpoint_id: EndpointId,
    worker: &str,
    limit: i64,
    lease: std::time::Duration,
) -> Result<Vec<Claimed>, sqlx::Error> {
    sqlx::query_as::<_, Claimed>(&format!(
        "WITH parked AS (
            SELECT d.tableoid, d.ctid, d.id, d.scheduled_at FROM delivery_queue d
             WHERE d.endpoint_id = $1 AND d.parked AND d.scheduled_at <= now()
               AND d.waits_for IS NULL AND d.trigger <> 'redirect'
             ORDER BY d.endpoint_id, d.scheduled_at LIMIT $3
             FOR UPDATE SKIP LOCKED
         ), unparked AS (
            SELECT d.tableoid, d.ctid, d.id, d.scheduled_at FROM delivery_queue d
             WHERE d.endpoint_id = $1 AND NOT d.parked AND d.scheduled_at <= now()
               AND d.status = 'pending' AND d.waits_for IS NULL AND d.trigger <> 'redirect'
             ORDER BY d.endpoint_id, d.scheduled_at LIMIT $3
             FOR UPDATE SKIP LOCKED
         ), chosen AS (
            SELECT * FROM parked UNION ALL SELECT * FROM unparked
             ORDER BY scheduled_at, id LIMIT $3
         )
         UPDATE delivery_queue d
            SET status = 'in_flight', parked = false, started_at = now(), claimed_by = $2,
                lease_expires_at = now() + $4
           FROM chosen p, events ev, endpoints e
          WHERE d.tableoid = p.tableoid AND d.ctid = p.ctid AND d.id = p.id
            AND ev.event_id = d.event_id AND e.id = d.endpoint_id
            AND e.destination = 'listen' AND e.deleted_at IS NULL
            AND (e.enabled OR d.trigger = 'test')
         RETURNING {CLAIMED}, NULL::timestamptz AS start_at"
    ))
    .bind(endpoint_id)
    .bind(worker)
    .bind(limit)
    .bind(chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(60)))
    .fetch_all(db)
    .await
}

/// Hands back rows the session claimed but did not finish (its CLI went away): waiting
/// again, parked, with the same request ids, for the CLI's return. If the session ended
/// meanwhile, housekeeping (`posthorn_settle_strays`) makes them dead letters.
pub async fn hand_back(
    db: impl sqlx::PgExecutor<'_>,
    worker: &str,
    rows: &[(AttemptId, DateTime<Utc>)],
) -> Result<u64, sqlx::Error> {
    let (ids, created): (Vec<i64>, Vec<DateTime<Utc>>) =
        rows.iter().map(|(id, at)| (id.get(), *at)).unzip();
    Ok(sqlx::query!(
        "UPDATE delivery_queue d
            SET status = 'pending', parked = true, claimed_by = NULL, lease_expires_at = NULL
           FROM unnest($2::bigint[], $3::timestamptz[]) AS r(id, created_at)
          WHERE d.id = r.id AND d.created_at = r.created_at
            AND d.status = 'in_flight' AND d.claimed_by = $1",
        worker,
        &ids,
        &created as _
    )
    .execute(db)
    .await?
    .rows_affected())
}
