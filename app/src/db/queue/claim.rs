//! The queue (`delivery_queue`): claim due rows with a lease, renew leases, hand back
//! what a stopping worker did not finish; outcomes are recorded in batches by
//! [`super::outcomes`] (each moves its row into `delivery_log`). Claims, releases and renewals change no indexed
//! column of the queue, so where the page has room (the fill factor keeps it for a
//! claim) they are HOT updates and write no index entries.

use crate::core::throttle::{BOOKING_HORIZON, SLOT_LEAD};
use crate::core::{AttemptId, EndpointId, ProjectId};
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::enqueue::AttemptOf;
use super::outcomes::NextAttempt;

/// An attempt leased to one dispatcher, with everything needed to send it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Claimed {
    pub id: AttemptId,
    pub created_at: DateTime<Utc>,
    #[sqlx(flatten)]
    pub of: AttemptOf,
    pub attempt: i32,
    pub trigger: crate::core::status::Trigger,
    pub request_id: String,
    pub chain_started_at: Option<DateTime<Utc>>,
    pub lease_expires_at: DateTime<Utc>,
    pub event_created_at: DateTime<Utc>,
    pub data: String,
    pub endpoint_url: String,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub custom_headers: sqlx::types::Json<Vec<(String, crate::core::sealed::StoredValue)>>,
    /// The endpoint's client certificate (PEM) and its key (sealed), if it has one.
    pub client_cert: Option<String>,
    pub client_key: Option<String>,
    pub signature_scheme: String,
    /// The endpoint's ed25519 key, sealed, if it has one.
    pub signing_key: Option<String>,
    pub scheme_switched_at: Option<DateTime<Utc>>,
    /// The start slot booked for it when the endpoint is throttled.
    pub start_at: Option<DateTime<Utc>>,
    /// Its event was erased: there is nothing left to send, and it ends as a dead letter.
    pub erased: bool,
    /// The W3C trace context its event was accepted under, and whether its project
    /// passes it on to receivers.
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub trace_propagation: bool,
    /// Where the endpoint's attempts go: `http`, a broker (`redis`, `nats`, …) with its
    /// settings (JSON) and sealed credentials, or `listen`.
    pub destination: String,
    pub destination_settings: Option<String>,
    pub destination_credentials: Option<String>,
}

impl Claimed {
    /// The attempt after this one, due `at` with a new request id: what a retryable
    /// failure schedules.
    pub fn follow_up(&self, at: DateTime<Utc>, request_id: String) -> NextAttempt {
        NextAttempt {
            // Sent where the endpoint is now, which may have moved since.
            of: AttemptOf {
                target_url: self.endpoint_url.clone(),
                ..self.of.clone()
            },
            trigger: self.trigger,
            attempt: self.attempt.saturating_add(1),
            scheduled_at: at,
            request_id,
        }
    }
}

/// The fair shares a claim respects: how many rows one endpoint and one project may hold
/// in this worker at once, and how many they already hold.
#[derive(Clone, Copy)]
pub struct Caps<'a> {
    pub per_endpoint: i64,
    pub per_project: i64,
    pub endpoints: &'a [EndpointId],
    pub endpoint_held: &'a [i64],
    pub projects: &'a [ProjectId],
    pub project_held: &'a [i64],
    /// This worker holds rows of a throttled endpoint (its later rows wait for slots).
    pub throttled_held: bool,
    /// A recent claim left an endpoint or project at its share: its due rows likely lie
    /// ahead of everyone else's.
    pub backlogged: bool,
    /// When every row of the last claim came from one project: its room now.
    pub sole_project_room: Option<i64>,
    /// A project this claim passes over whatever its share, so that the rows of everyone
    /// else are found even while that project's backlog fills the oldest due rows and
    /// its sends finish too fast for its share ever to be full at a claim.
    pub pass_over: Option<ProjectId>,
}

impl Caps<'_> {
    /// Whether due rows this claim cannot take may lie ahead of the ones it can: an
    /// endpoint or project at its share here, or a throttled endpoint booked ahead.
    /// Then walking the due rows oldest first could pass any number of them.
    pub fn blocked_somewhere(&self) -> bool {
        self.throttled_held
            || self.endpoint_held.iter().any(|n| *n >= self.per_endpoint)
            || self.project_held.iter().any(|n| *n >= self.per_project)
    }

    /// Whether to find the candidates endpoint by endpoint for a claim of `limit` rows:
    /// something due is refused, an endpoint holds half its share or more, or a recent
    /// claim filled a share and the endpoints held here could not take the candidates
    /// oldest first reads. Oldest first, such an endpoint's backlog fills the candidates
    /// with rows it has no room for (800 read, ranked and sorted to take the 11 it had
    /// room for: 8 ms a claim while one busy endpoint drained). With many endpoints
    /// sending (a fan-out) the oldest rows are mostly takeable, and walking them is
    /// cheaper than a descent per endpoint.
    fn by_endpoint(&self, limit: i64) -> bool {
        (self.backlogged && (self.endpoints.len() as i64) * self.per_endpoint < limit * 4)
            || self.blocked_somewhere()
            || self
                .endpoint_held
                .iter()
                .any(|n| n * 2 >= self.per_endpoint)
    }

    fn saturated<Id: Copy>(ids: &[Id], held: &[i64], cap: i64) -> Vec<Id> {
        ids.iter()
            .zip(held)
            .filter(|(_, n)| **n >= cap)
            .map(|(id, _)| *id)
            .collect()
    }
}

/// How many rows an oldest-first claim looks for, given `limit` (the room this worker
/// has) and, when the last claim's rows all came from one project, that project's room
/// now. Its backlog then likely fills the oldest due rows, and the claim reads four
/// times its size in candidates: 800 read and ranked to take the 52 a fan-out's project
/// had room for (half the claim's time in the ranking). Sized to that room, the claim
/// reads a quarter as many and fills the project's share; the next claim passes the
/// project over and takes everyone else's rows. Never below a quarter of `limit`, so a
/// project one row short of its share cannot shrink every claim to a single row.
pub fn claim_size(limit: i64, sole_project_room: Option<i64>) -> i64 {
    match sole_project_room {
        Some(room) if room > 0 && room < limit => room.max(limit / 4).max(1),
        _ => limit,
    }
}

/// A [`Claimed`] row's columns but `start_at`, from the queue row `d`, its event `ev`
/// and its endpoint `e`.
pub(super) const CLAIMED: &str = "d.id, d.created_at, d.project_id, d.event_id, d.event_type,
    d.endpoint_id, d.target_url, d.attempt, d.trigger, d.request_id, d.chain_started_at,
    d.lease_expires_at, ev.created_at AS event_created_at, ev.data::text AS data,
    e.url AS endpoint_url, e.secret,
    CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END AS previous_secret,
    e.custom_headers, e.client_cert, e.client_key,
    e.signature_scheme, e.signing_key, e.scheme_switched_at,
    (ev.erased_at IS NOT NULL OR d.error_kind IS NOT DISTINCT FROM 'erased') AS erased,
    ev.traceparent, ev.tracestate,
    coalesce((SELECT p.trace_propagation FROM projects p WHERE p.id = d.project_id), true) AS trace_propagation,
    e.destination, e.destination_settings::text AS destination_settings, e.destination_credentials";

/// What a row must satisfy to be claimed, whichever way the candidates are found.
macro_rules! claimable {
    () => {
        "d.status = 'pending' AND NOT d.parked AND d.scheduled_at <= now()
         -- a listen session's rows are its session's to send (`super::listen`)
         AND (d.trigger = 'redirect' OR (e.destination <> 'listen'
              AND (d.trigger = 'test' OR (e.enabled AND e.deleted_at IS NULL))))
         -- an endpoint booked far enough ahead is left alone until its slots run low
         AND (d.trigger = 'redirect' OR e.rate_limit IS NULL OR e.next_start_at IS NULL
              OR e.next_start_at <= now() + $12 / 2)"
    };
}

/// Candidates oldest first through the due index: the cheapest walk while nothing due is
/// refused (no endpoint or project at its share, no throttled endpoint booked ahead).
const OLDEST_FIRST: &str = concat!(
    "WITH candidates AS (
        SELECT d.id, d.created_at, d.scheduled_at, d.endpoint_id, d.project_id, d.tableoid, d.ctid,
               (d.trigger <> 'redirect' AND e.rate_limit IS NOT NULL) AS throttled
        FROM delivery_queue d
        JOIN endpoints e ON e.id = d.endpoint_id
        WHERE ",
    claimable!(),
    "
          AND NOT (d.endpoint_id = ANY($4)) AND NOT (d.project_id = ANY($5))
        ORDER BY d.scheduled_at
        LIMIT $2 * 4
     )"
);

/// Candidates endpoint by endpoint: a skip scan finds each endpoint with waiting rows
/// (one index descent each), endpoints and projects at their share are passed over whole,
/// and each other endpoint gives its oldest due rows, as many as it has room for. Its
/// cost grows with the number of endpoints that have work, never with the rows queued
/// behind one of them, so an endpoint with 100,000 due rows that answers in a second
/// slows no one else's claim.
const BY_ENDPOINT: &str = concat!(
    "WITH RECURSIVE ready(endpoint_id) AS (
        (SELECT endpoint_id FROM delivery_queue
          WHERE NOT parked ORDER BY endpoint_id LIMIT 1)
        UNION ALL
        SELECT (SELECT d.endpoint_id FROM delivery_queue d
                 WHERE NOT d.parked AND d.endpoint_id > r.endpoint_id
                 ORDER BY d.endpoint_id LIMIT 1)
        FROM ready r WHERE r.endpoint_id IS NOT NULL
     ), candidates AS (
        SELECT c.id, c.created_at, c.scheduled_at, c.endpoint_id, c.project_id, c.tableoid, c.ctid,
               c.throttled
        FROM ready r
        JOIN endpoints e ON e.id = r.endpoint_id
        CROSS JOIN LATERAL (
            SELECT d.id, d.created_at, d.scheduled_at, d.endpoint_id, d.project_id, d.tableoid,
                   d.ctid, (d.trigger <> 'redirect' AND e.rate_limit IS NOT NULL) AS throttled
            FROM delivery_queue d
            -- As a range of the by-endpoint index (a row comparison only it can
            -- serve): given `endpoint_id = …`, the planner may walk the due index in
            -- time order instead, past every row of the endpoints ahead of this one.
            WHERE (d.endpoint_id, d.scheduled_at) > (r.endpoint_id, '-infinity'::timestamptz)
              AND (d.endpoint_id, d.scheduled_at) <= (r.endpoint_id, now()) AND ",
    claimable!(),
    "
            ORDER BY d.endpoint_id, d.scheduled_at
            -- No more than the endpoint has room for.
            LIMIT greatest(0, $10 - coalesce(($7::bigint[])[array_position($6::bigint[], r.endpoint_id)], 0))
        ) c
        WHERE NOT (r.endpoint_id = ANY($4)) AND NOT (e.project_id = ANY($5))
        ORDER BY c.scheduled_at
        LIMIT $2 * 4
     )"
);

/// A connection for the claim (and, a second one, for the outcome writer) whose plans
/// cannot depend on the statistics. A queue's
/// statistics are always out of date: a burst of 100,000 rows lands between two ANALYZEs
/// of the day's partition, and a plan built on "15 due rows" reads every due row and sorts
/// them (on disk) to take a few, 60 ms a claim. Here the claim can only walk the due
/// indexes in order and look rows up by key, whatever the statistics say, and keeps one
/// generic plan (a custom plan over the day partitions costs more to plan than to run).
pub fn claim_pool(pool: &PgPool) -> PgPool {
    let options = (*pool.connect_options()).clone().options([
        // Every join of the claim is a key lookup into few rows: on a table the
        // statistics call empty, a seq scan and hash join read all 100,000 rows instead.
        ("enable_seqscan", "off"),
        ("enable_hashjoin", "off"),
        ("enable_mergejoin", "off"),
        ("enable_sort", "off"),
        ("enable_bitmapscan", "off"),
        ("plan_cache_mode", "force_generic_plan"),
        // The costs those settings add would have every claim compiled by the JIT
        // (seconds each).
        ("jit", "off"),
    ]);
    crate::db::pool_options(1).connect_lazy_with(options)
}

/// Claims up to `limit` due rows, skipping rows other workers hold, and taking no more
/// for one endpoint or one project than its share allows: a customer whose endpoints
/// hang can fill its own share of the slots, never everyone's. Disabled endpoints' rows
/// stay pending; redirects and test sends go out regardless of the endpoint's state.
///
/// Throttled endpoints (a `rate_limit`) get start slots `1/rate_limit` s apart, booked
/// here under the endpoint row's lock up to [`BOOKING_HORIZON`] ahead: each such row
/// comes back with its `start_at`, and `next_start_at` moves past the last slot booked,
/// so any number of dispatchers share one spacing. Redirects go to a bin and are not
/// throttled. Rows that find no slot stay pending in their place.
pub async fn claim_due<'c>(
    pool: impl sqlx::PgExecutor<'c>,
    worker: &str,
    limit: i64,
    lease: std::time::Duration,
    caps: &Caps<'_>,
) -> Result<Vec<Claimed>, sqlx::Error> {
    let full_endpoints = Caps::saturated(caps.endpoints, caps.endpoint_held, caps.per_endpoint);
    let mut full_projects = Caps::saturated(caps.projects, caps.project_held, caps.per_project);
    full_projects.extend(caps.pass_over);
    // Passing a project over, endpoint by endpoint: the oldest-first walk would read
    // every due row of its backlog to get past it.
    let (candidates, limit) = if caps.pass_over.is_some() || caps.by_endpoint(limit) {
        (BY_ENDPOINT, limit)
    } else {
        (OLDEST_FIRST, claim_size(limit, caps.sole_project_room))
    };
    sqlx::query_as::<_, Claimed>(&format!(
        "{candidates}, ranked AS (
            SELECT c.id, c.created_at, c.scheduled_at, c.endpoint_id, c.throttled, c.tableoid, c.ctid,
                   -- What each endpoint and project already holds, looked up in the
                   -- arrays (joined to them, with hash joins off, the arrays were
                   -- unnested again for every candidate: 10 ms of an 800-row claim).
                   coalesce(($7::bigint[])[array_position($6::bigint[], c.endpoint_id)], 0)
                     + row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.scheduled_at, c.id) AS endpoint_rank,
                   coalesce(($9::bigint[])[array_position($8::bigint[], c.project_id)], 0)
                     + row_number() OVER (PARTITION BY c.project_id ORDER BY c.scheduled_at, c.id) AS project_rank,
                   row_number() OVER (PARTITION BY c.endpoint_id, c.throttled ORDER BY c.scheduled_at, c.id) AS throttle_rank
            FROM candidates c
         ), throttle AS (
            -- An endpoint being changed (its trigger parks those very rows) is skipped,
            -- not waited for: the claim waits on nothing. Its rows find no slot this time
            -- and stay pending.
            SELECT e.id, e.rate_limit, greatest(e.next_start_at, now() + $13) AS first_slot
            FROM endpoints e
            WHERE e.id IN (SELECT endpoint_id FROM ranked WHERE throttled) AND e.rate_limit IS NOT NULL
            ORDER BY e.id
            FOR UPDATE OF e SKIP LOCKED
         ), room AS (
            SELECT id, rate_limit, first_slot,
                   greatest(0, ceil(extract(epoch FROM now() + $12 - first_slot) * rate_limit))::bigint AS slots
            FROM throttle
         ), due AS (
            SELECT r.id, r.created_at, r.scheduled_at, r.endpoint_id, r.throttled, r.tableoid, r.ctid
            FROM ranked r
            LEFT JOIN room t ON t.id = r.endpoint_id
            WHERE r.endpoint_rank <= $10 AND r.project_rank <= $11
              AND (NOT r.throttled OR r.throttle_rank <= coalesce(t.slots, 0))
            ORDER BY r.scheduled_at
            LIMIT $2
         ), locked AS (
            -- Only the rows taken are locked (a lock is a write: the candidates passed
            -- over cost nothing); one another worker holds, or took since, is skipped.
            SELECT due.id, due.created_at, due.scheduled_at, due.endpoint_id, due.throttled,
                   d.tableoid, d.ctid
            FROM due JOIN delivery_queue d ON d.id = due.id
            WHERE d.status = 'pending' AND NOT d.parked AND d.scheduled_at <= now()
            FOR UPDATE OF d SKIP LOCKED
         ), slotted AS (
            SELECT l.id, l.created_at, l.endpoint_id, l.throttled, l.tableoid, l.ctid,
                   row_number() OVER (PARTITION BY l.endpoint_id, l.throttled ORDER BY l.scheduled_at, l.id) AS k
            FROM locked l
         ), booked AS (
            UPDATE endpoints e SET next_start_at = t.first_slot + n.taken * interval '1 second' / t.rate_limit
              FROM room t
              JOIN (SELECT endpoint_id, count(*) AS taken FROM slotted WHERE throttled GROUP BY 1) n
                ON n.endpoint_id = t.id
             WHERE e.id = t.id
            RETURNING e.id
         )
         UPDATE delivery_queue d
            SET status = 'in_flight', started_at = now(), claimed_by = $1,
                lease_expires_at = now() + $3
           FROM slotted s LEFT JOIN room t ON t.id = s.endpoint_id AND s.throttled, events ev, endpoints e
          -- By the row's address, which the claim's lock keeps: a lookup by key can be
          -- planned as a walk of the whole partition when its statistics say it is empty.
          WHERE d.tableoid = s.tableoid AND d.ctid = s.ctid AND d.id = s.id
            AND ev.event_id = d.event_id AND e.id = d.endpoint_id
         RETURNING {CLAIMED},
                   t.first_slot + (s.k - 1) * interval '1 second' / t.rate_limit AS start_at"
    ))
    .bind(worker)
    .bind(limit)
    .bind(chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(60)))
    .bind(&full_endpoints)
    .bind(&full_projects)
    .bind(caps.endpoints)
    .bind(caps.endpoint_held)
    .bind(caps.projects)
    .bind(caps.project_held)
    .bind(caps.per_endpoint)
    .bind(caps.per_project)
    .bind(chrono::Duration::from_std(BOOKING_HORIZON).unwrap_or(chrono::Duration::seconds(2)))
    .bind(chrono::Duration::from_std(SLOT_LEAD).unwrap_or(chrono::Duration::milliseconds(50)))
    .fetch_all(pool)
    .await
}

/// Hands rows this worker claimed but did not send back to the queue, unchanged.
pub async fn release<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    worker: &str,
    rows: &[(AttemptId, DateTime<Utc>)],
) -> Result<u64, sqlx::Error> {
    let ids: Vec<i64> = rows.iter().map(|r| r.0.get()).collect();
    let created: Vec<DateTime<Utc>> = rows.iter().map(|r| r.1).collect();
    Ok(sqlx::query!(
        "UPDATE delivery_queue d SET status = 'pending', claimed_by = NULL, lease_expires_at = NULL
           FROM unnest($2::bigint[], $3::timestamptz[]) AS r(id, created_at)
          WHERE d.id = r.id AND d.created_at = r.created_at
            AND d.status = 'in_flight' AND d.claimed_by = $1",
        worker,
        &ids,
        &created as _,
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// Extends the leases of rows this worker still holds. Rows locked meanwhile are being
/// finished (their outcome moves them out of the queue) and are skipped: waiting for them
/// while the outcome's statement waited for a row locked here was a deadlock, broken by
/// the server after a second with one of the two failed.
pub async fn renew_leases(
    pool: &PgPool,
    worker: &str,
    ids: &[AttemptId],
    lease: std::time::Duration,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query!(
        "WITH mine AS (
            SELECT tableoid, ctid FROM delivery_queue
             WHERE id = ANY($2) AND status = 'in_flight' AND claimed_by = $1
             FOR UPDATE SKIP LOCKED
         )
         UPDATE delivery_queue d SET lease_expires_at = now() + $3
           FROM mine WHERE d.tableoid = mine.tableoid AND d.ctid = mine.ctid",
        worker,
        ids as _,
        chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(60)) as _,
    )
    .execute(pool)
    .await?
    .rows_affected())
}

/// Rows whose worker vanished go back to the queue with the same request id.
pub async fn recover_expired(pool: &PgPool) -> Result<u64, sqlx::Error> {
    // `NOT parked`: a row in flight never is (a constraint says so), and the unparked
    // rows have an index, so a held backlog is not read.
    Ok(sqlx::query!(
        "UPDATE delivery_queue SET status = 'pending', claimed_by = NULL, lease_expires_at = NULL
         WHERE status = 'in_flight' AND lease_expires_at < now() AND NOT parked",
    )
    .execute(pool)
    .await?
    .rows_affected())
}

/// A stopping worker hands back what it holds but did not finish.
pub async fn release_all(pool: &PgPool, worker: &str) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query!(
        "UPDATE delivery_queue SET status = 'pending', claimed_by = NULL, lease_expires_at = NULL
         WHERE status = 'in_flight' AND claimed_by = $1",
        worker,
    )
    .execute(pool)
    .await?
    .rows_affected())
}

/// Queue depth and the age of the oldest due pending row, for /metrics.
pub async fn queue_stats(pool: &PgPool) -> Result<(i64, f64), sqlx::Error> {
    let stats = sqlx::query!(
        r#"SELECT count(*) AS "depth!",
                  coalesce(extract(epoch FROM now() - min(scheduled_at)), 0)::float8 AS "oldest!"
         FROM delivery_queue WHERE status = 'pending' AND NOT parked AND scheduled_at <= now()"#,
    )
    .fetch_one(pool)
    .await?;
    Ok((stats.depth, stats.oldest))
}

/// When the next scheduled row falls due (so the loop can sleep exactly that long). As
/// the first row of the due index after now: written as `min(…)`, its plan on the claim's
/// connection read the whole by-endpoint index (4–5 ms a call beside a fan-out's backlog).
pub async fn next_due<'c>(
    pool: impl sqlx::PgExecutor<'c>,
) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT scheduled_at AS "scheduled_at: DateTime<Utc>" FROM delivery_queue
          WHERE status = 'pending' AND NOT parked AND scheduled_at > now()
          ORDER BY scheduled_at LIMIT 1"#,
    )
    .fetch_optional(pool)
    .await
}

#[cfg(test)]
mod tests {
    use super::claim_size;

    #[test]
    fn a_claim_is_sized_to_the_room_of_the_project_that_filled_the_last_one() {
        assert_eq!(claim_size(200, Some(52)), 52);
        // Never below a quarter of the worker's room.
        assert_eq!(claim_size(200, Some(3)), 50);
        assert_eq!(claim_size(3, Some(1)), 1);
        // A full project is passed over by the claim: everyone else's rows come next.
        assert_eq!(claim_size(200, Some(0)), 200);
        // Room enough, or rows from several projects: the worker's room.
        assert_eq!(claim_size(200, Some(256)), 200);
        assert_eq!(claim_size(200, None), 200);
    }
}
