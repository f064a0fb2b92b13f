//! Ordering keys. Per endpoint, the attempts of events that share a key form a lane:
//! one chain at a time, in the order the events were accepted. Joining a lane and
//! releasing its next member both happen under the lane's advisory lock, so two requests,
//! two dispatchers or a request and a dispatcher never see it half changed; after a
//! crash the lane is exactly as the last commit left it (an in-flight head's lease runs
//! out and it is sent again, still ahead of the rest).

use std::collections::HashMap;

use sqlx::PgConnection;

use crate::core::{EndpointId, EventId, ProjectId};

use super::enqueue::{Lane, NewAttempt};

/// A lane: (endpoint, ordering key).
pub type LaneId = (EndpointId, String);

/// What a lane lock is taken on: (project, ordering key). One key's lanes on every
/// endpoint of the project share it, so a batch of 100 keyed events fanned out to 500
/// endpoints holds 100 locks, not 50,000: that many overflowed PostgreSQL's shared lock
/// table (`max_locks_per_transaction` × `max_connections`), after which every tenant's
/// statements failed with "out of shared memory".
pub type KeyLock = (ProjectId, String);

/// A lane that ended, with its project (whose key lock guards it).
pub type EndedLane = (ProjectId, LaneId);

/// The lock's number for each key, as one SQL expression over `l.project_id`, `l.key`.
const LOCK_ID: &str = "hashtextextended(l.project_id::text || '/' || l.key, 16)";

/// Takes the keys' locks until the transaction ends, always in one global order, so
/// transactions locking several cannot deadlock.
///
/// The lane queries that follow span every day's partition; planned afresh for each
/// call they cost ~2.5 ms of planning against ~0.1 ms of running, so the rest of the
/// transaction keeps its generic plans (`plan_cache_mode`, local to the transaction).
async fn lock(conn: &mut PgConnection, keys: &[KeyLock]) -> Result<(), sqlx::Error> {
    let (projects, keys): (Vec<ProjectId>, Vec<String>) = keys.iter().cloned().unzip();
    sqlx::query(&format!(
        "SELECT count(pg_advisory_xact_lock(k)), set_config('plan_cache_mode', 'force_generic_plan', true) FROM (
            SELECT DISTINCT {LOCK_ID} AS k
            FROM unnest($1::bigint[], $2::text[]) AS l(project_id, key) ORDER BY 1) s"
    ))
    .bind(&projects)
    .bind(&keys)
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes those of the keys' locks that are free, waiting for none; returns the keys
/// whose lock is now held.
async fn try_lock(conn: &mut PgConnection, keys: &[KeyLock]) -> Result<Vec<KeyLock>, sqlx::Error> {
    let (projects, names): (Vec<ProjectId>, Vec<String>) = keys.iter().cloned().unzip();
    sqlx::query_as(&format!(
        "SELECT l.project_id, l.key FROM unnest($1::bigint[], $2::text[]) AS l(project_id, key)
          WHERE pg_try_advisory_xact_lock({LOCK_ID})"
    ))
    .bind(&projects)
    .bind(&names)
    .fetch_all(conn)
    .await
}

/// Takes the locks of all these keys at once, for a transaction that joins several lanes
/// in turn (a batch of events): each join then finds its key already held.
pub async fn lock_all(conn: &mut PgConnection, keys: Vec<KeyLock>) -> Result<(), sqlx::Error> {
    let keys = distinct(keys.into_iter());
    match keys.is_empty() {
        true => Ok(()),
        false => lock(conn, &keys).await,
    }
}

fn distinct<T: Ord>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut items: Vec<T> = items.collect();
    items.sort();
    items.dedup();
    items
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
                (Lane::Join { .. }, Some(key)) => Some((a.of.endpoint_id, key.clone())),
                _ => None,
            }),
    );
    if lanes.is_empty() {
        return Ok(());
    }
    let keys = distinct(
        attempts
            .iter()
            .filter_map(|a| match (&a.lane, &a.ordering_key) {
                (Lane::Join { .. }, Some(key)) => Some((a.of.project_id, key.clone())),
                _ => None,
            }),
    );
    lock(conn, &keys).await?;
    let (endpoints, keys): (Vec<EndpointId>, Vec<String>) = lanes.iter().cloned().unzip();
    let tails = sqlx::query!(
        r#"SELECT l.endpoint_id AS "endpoint_id!: EndpointId", l.key AS "key!",
                t.event_id AS "event_id!: EventId"
         FROM unnest($1::bigint[], $2::text[]) AS l(endpoint_id, key)
         CROSS JOIN LATERAL (
            SELECT d.event_id FROM delivery_queue d
            WHERE d.endpoint_id = l.endpoint_id AND d.ordering_key = l.key
              AND d.lane_seq IS NOT NULL
            ORDER BY d.lane_seq DESC LIMIT 1) t"#,
        &endpoints as _,
        &keys,
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut tail: HashMap<LaneId, EventId> = tails
        .into_iter()
        .map(|t| ((t.endpoint_id, t.key), t.event_id))
        .collect();
    for a in attempts.iter_mut() {
        let (Lane::Join { waits_for }, Some(key)) = (&mut a.lane, &a.ordering_key) else {
            continue;
        };
        let lane = (a.of.endpoint_id, key.clone());
        *waits_for = tail.insert(lane, a.of.event_id.clone());
    }
    Ok(())
}

/// Releases the next member of each lane whose head chain has just ended (succeeded or
/// dead-lettered): it becomes due now, or stays parked if its endpoint is disabled.
/// Call inside the transaction that records the ends. Waits for no lock: a lane whose
/// key another transaction holds (a tenant's batch, for as long as that takes) is left
/// in `lane_releases` for [`release_deferred`], so one tenant's transaction never stops
/// the outcome writer that every tenant's attempts go through. Returns how many members
/// were released now.
pub async fn advance(conn: &mut PgConnection, ended: &[EndedLane]) -> Result<u64, sqlx::Error> {
    let ended = distinct(ended.iter().cloned());
    if ended.is_empty() {
        return Ok(0);
    }
    let keys = distinct(ended.iter().map(|(p, (_, key))| (*p, key.clone())));
    let held = try_lock(conn, &keys).await?;
    let (free, busy): (Vec<EndedLane>, Vec<EndedLane>) = ended
        .into_iter()
        .partition(|(p, (_, key))| held.iter().any(|(hp, hk)| hp == p && hk == key));
    if !busy.is_empty() {
        defer(conn, &busy).await?;
    }
    release(conn, &free).await
}

/// Leaves the lanes for a later pass.
async fn defer(conn: &mut PgConnection, lanes: &[EndedLane]) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO lane_releases (project_id, endpoint_id, ordering_key)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[])",
        &lanes.iter().map(|l| l.0.get()).collect::<Vec<i64>>(),
        &lanes.iter().map(|l| l.1 .0.get()).collect::<Vec<i64>>(),
        &lanes
            .iter()
            .map(|l| l.1 .1.clone())
            .collect::<Vec<String>>(),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Releases the waiting head of each lane, whose key's lock the caller holds.
async fn release(conn: &mut PgConnection, lanes: &[EndedLane]) -> Result<u64, sqlx::Error> {
    if lanes.is_empty() {
        return Ok(0);
    }
    let (endpoints, keys): (Vec<i64>, Vec<String>) =
        lanes.iter().map(|(_, (e, k))| (e.get(), k.clone())).unzip();
    // A head that is not waiting (a chain still running) is left alone: the lane is not
    // free yet, whatever ended.
    Ok(sqlx::query!(
        "UPDATE delivery_queue d
            SET waits_for = NULL, parked = NOT (e.enabled AND e.deleted_at IS NULL AND e.destination <> 'listen'),
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
        &endpoints,
        &keys,
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// Releases the lanes [`advance`] left, those whose key is free now; returns how many
/// members it released. Any process may run it; two at once take different rows.
pub async fn release_deferred(pool: &sqlx::PgPool) -> Result<u64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let left: Vec<(i64, ProjectId, EndpointId, String)> = sqlx::query!(
        r#"SELECT id, project_id AS "project_id: ProjectId", endpoint_id AS "endpoint_id: EndpointId",
                  ordering_key FROM lane_releases
          ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED"#,
    )
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .map(|r| (r.id, r.project_id, r.endpoint_id, r.ordering_key))
    .collect();
    if left.is_empty() {
        return Ok(0);
    }
    let keys = distinct(left.iter().map(|(_, p, _, k)| (*p, k.clone())));
    let held = try_lock(&mut tx, &keys).await?;
    let (done, free): (Vec<i64>, Vec<EndedLane>) = left
        .into_iter()
        .filter(|(_, p, _, k)| held.iter().any(|(hp, hk)| hp == p && hk == k))
        .map(|(id, p, e, k)| (id, (p, (e, k))))
        .unzip();
    let released = release(&mut tx, &distinct(free.into_iter())).await?;
    sqlx::query!("DELETE FROM lane_releases WHERE id = ANY($1)", &done)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if released > 0 {
        crate::db::wakeup::wake_dispatchers(pool).await;
    }
    Ok(released)
}
