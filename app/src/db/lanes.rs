//! Ordering keys. Per endpoint, the attempts of events that share a key form a lane:
//! one chain at a time, in the order the events were accepted. Joining a lane and
//! releasing its next member both happen under the lane's advisory lock, so two requests,
//! two dispatchers or a request and a dispatcher never see it half changed; after a
//! crash the lane is exactly as the last commit left it (an in-flight head's lease runs
//! out and it is sent again, still ahead of the rest).

use std::collections::HashMap;

use sqlx::PgConnection;

use super::attempts::{Lane, NewAttempt};

/// A lane: (endpoint, ordering key).
pub type LaneId = (i64, String);

/// Takes the lanes' locks until the transaction ends, always in one global order, so
/// transactions locking several lanes cannot deadlock.
///
/// The lane queries that follow span every day's partition; planned afresh for each
/// call they cost ~2.5 ms of planning against ~0.1 ms of running, so the rest of the
/// transaction keeps its generic plans (`plan_cache_mode`, local to the transaction).
async fn lock(conn: &mut PgConnection, lanes: &[LaneId]) -> Result<(), sqlx::Error> {
    let (endpoints, keys): (Vec<i64>, Vec<String>) = lanes.iter().cloned().unzip();
    sqlx::query(
        "SELECT count(pg_advisory_xact_lock(k)), set_config('plan_cache_mode', 'force_generic_plan', true) FROM (
            SELECT DISTINCT hashtextextended(l.endpoint_id::text || '/' || l.key, 16) AS k
            FROM unnest($1::bigint[], $2::text[]) AS l(endpoint_id, key) ORDER BY 1) s",
    )
    .bind(&endpoints)
    .bind(&keys)
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes the locks of all these lanes at once, for a transaction that joins several in
/// turn (a batch of events): each join then finds its lane already held.
pub async fn lock_all(conn: &mut PgConnection, lanes: Vec<LaneId>) -> Result<(), sqlx::Error> {
    let lanes = distinct(lanes.into_iter());
    match lanes.is_empty() {
        true => Ok(()),
        false => lock(conn, &lanes).await,
    }
}

fn distinct(lanes: impl Iterator<Item = LaneId>) -> Vec<LaneId> {
    let mut lanes: Vec<LaneId> = lanes.collect();
    lanes.sort();
    lanes.dedup();
    lanes
}

/// Puts every attempt marked [`Lane::Join`] at the end of its lane: it waits for the
/// lane's last unfinished event, or for the attempt ahead of it in `attempts` (their
/// order is the order they join in). Call inside the inserting transaction, right before
/// the insert: the locks taken here hold until it commits.
pub async fn join(conn: &mut PgConnection, attempts: &mut [NewAttempt]) -> Result<(), sqlx::Error> {
    let lanes = distinct(
        attempts
            .iter()
            .filter_map(|a| match (&a.lane, &a.ordering_key) {
                (Lane::Join { .. }, Some(key)) => Some((a.endpoint_id, key.clone())),
                _ => None,
            }),
    );
    if lanes.is_empty() {
        return Ok(());
    }
    lock(conn, &lanes).await?;
    let (endpoints, keys): (Vec<i64>, Vec<String>) = lanes.iter().cloned().unzip();
    let tails: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT l.endpoint_id, l.key, t.event_id
         FROM unnest($1::bigint[], $2::text[]) AS l(endpoint_id, key)
         CROSS JOIN LATERAL (
            SELECT d.event_id FROM delivery_queue d
            WHERE d.endpoint_id = l.endpoint_id AND d.ordering_key = l.key
              AND d.lane_seq IS NOT NULL
            ORDER BY d.lane_seq DESC LIMIT 1) t",
    )
    .bind(&endpoints)
    .bind(&keys)
    .fetch_all(&mut *conn)
    .await?;
    let mut tail: HashMap<LaneId, String> = tails
        .into_iter()
        .map(|(endpoint, key, event)| ((endpoint, key), event))
        .collect();
    for a in attempts.iter_mut() {
        let (Lane::Join { waits_for }, Some(key)) = (&mut a.lane, &a.ordering_key) else {
            continue;
        };
        let lane = (a.endpoint_id, key.clone());
        *waits_for = tail.insert(lane, a.event_id.clone());
    }
    Ok(())
}

/// Releases the next member of each lane whose head chain has just ended (succeeded or
/// dead-lettered): it becomes due now, or stays parked if its endpoint is disabled.
/// Call inside the transaction that records the ends. Returns how many were released.
pub async fn advance(conn: &mut PgConnection, ended: &[LaneId]) -> Result<u64, sqlx::Error> {
    let lanes = distinct(ended.iter().cloned());
    if lanes.is_empty() {
        return Ok(0);
    }
    lock(conn, &lanes).await?;
    let (endpoints, keys): (Vec<i64>, Vec<String>) = lanes.into_iter().unzip();
    // A head that is not waiting (a chain still running) is left alone: the lane is not
    // free yet, whatever ended.
    Ok(sqlx::query(
        "UPDATE delivery_queue d
            SET waits_for = NULL, parked = NOT (e.enabled AND e.deleted_at IS NULL),
                scheduled_at = greatest(d.scheduled_at, now())
           FROM (SELECT h.id, h.created_at
                   FROM unnest($1::bigint[], $2::text[]) AS l(endpoint_id, key)
                   CROSS JOIN LATERAL (
                      SELECT x.id, x.created_at, x.waits_for FROM delivery_queue x
                      WHERE x.endpoint_id = l.endpoint_id AND x.ordering_key = l.key
                        AND x.lane_seq IS NOT NULL
                      ORDER BY x.lane_seq LIMIT 1) h
                  WHERE h.waits_for IS NOT NULL) n, endpoints e
          WHERE d.id = n.id AND d.created_at = n.created_at AND e.id = d.endpoint_id",
    )
    .bind(&endpoints)
    .bind(&keys)
    .execute(conn)
    .await?
    .rows_affected())
}
