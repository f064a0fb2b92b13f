//! The public API's per-request statements, taken together for concurrent requests: one
//! statement and one commit for every request waiting at that moment.
//!
//! A request answers only once its event is durable, so on one machine the public API was
//! bound by commits: at 1,100–1,800 single-event requests/s its backends waited on
//! `WALSync` and the `WALWrite` lock, with the CPU a quarter idle; and every request
//! counted itself on its key's one counter row, each waiting for the one before. Requests
//! now queue what they have to store (a lone event, a key's hit); each of a few writers
//! takes whatever is queued when it is free (a request alone goes at once: nothing waits
//! for a group to fill) and stores it with one statement. A group of events that fails is
//! stored again event by event, so an event the database refuses fails its own request
//! only, never its neighbours'.

use crate::core::{AttemptId, EventId, ProjectId};
use tracing::Instrument;

use std::{
    future::Future,
    pin::Pin,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot, Mutex, OwnedSemaphorePermit, Semaphore};

use super::{
    api_keys::{self, KeyOwner},
    kept::Kept,
    queue::enqueue::{Inserted, NewAttempt},
};

/// One event without an ordering key, checked and fanned out, ready to store.
#[derive(Debug)]
pub(crate) struct Lone {
    pub project_id: ProjectId,
    pub event_id: EventId,
    pub event_type: String,
    /// Valid JSON text, stored byte for byte.
    pub data: String,
    pub client_id: Option<String>,
    /// The data subjects as a JSON array of strings.
    pub subjects: Option<String>,
    /// The endpoints its filters skipped and why, as JSON (see [`super::events::Skipped`]).
    pub filtered_out: Option<String>,
    /// The W3C trace context it was accepted under.
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub attempts: Vec<NewAttempt>,
    /// Which attempts go to this process's dispatcher already leased.
    pub taken: Vec<bool>,
    /// The dispatcher they are leased to, and for how long (every lone event of one
    /// process names the same one).
    pub lease: Option<(String, chrono::Duration)>,
}

impl Lone {
    /// Some attempt is left to a claim, so the dispatchers are to be woken.
    fn leaves_work(&self) -> bool {
        self.taken.len() < self.attempts.len() || self.taken.iter().any(|t| !t)
    }
}

/// What storing a lone event came to: its creation time, or None when its idempotency key
/// was seen before; and its attempts as inserted.
#[derive(Debug, Default)]
pub(crate) struct Stored {
    pub created_at: Option<DateTime<Utc>>,
    pub rows: Vec<Inserted>,
}

/// A group of events holds at most this many, and this much weight: a group is one
/// statement, and one tenant's large payloads or wide fan-outs must not make everyone's
/// slow.
pub const MAX_GROUP: usize = 100;
pub const MAX_GROUP_BYTES: usize = 2 * 1024 * 1024;

/// What an attempt weighs in a group, in payload bytes: a row of the queue with its index
/// entries and the handing-off it may take. 2,048 attempts fill a group, so one tenant's
/// events fanned out to 500 endpoints each share a statement with few others.
pub const ATTEMPT_WEIGHT: usize = 1024;

/// A lone event's weight in a group: its payload and its attempts.
fn weight(l: &Lone) -> usize {
    l.data.len()
        + l.subjects.as_ref().map_or(0, String::len)
        + l.filtered_out.as_ref().map_or(0, String::len)
        + l.attempts.len() * ATTEMPT_WEIGHT
}

/// The statement behind every lone event: the events and all their attempts, one commit.
/// Events are inserted in the order given (a repeated idempotency key keeps the first),
/// attempts only for the events inserted.
const STORE: &str = concat!(
    "WITH ev AS (
        INSERT INTO events (event_id, project_id, event_type, data, client_id, deliveries, ordering_key, subjects, filtered_out, traceparent, tracestate)
        SELECT e.event_id, e.project_id, e.event_type, e.data::json, e.client_id, e.deliveries, NULL,
               CASE WHEN e.subjects IS NOT NULL
                    THEN ARRAY(SELECT json_array_elements_text(e.subjects::json)) END,
               e.filtered_out::jsonb, e.traceparent, e.tracestate
        FROM unnest($18::text[], $19::bigint[], $20::text[], $21::text[], $22::text[], $23::int[], $24::text[], $25::text[], $26::text[], $27::text[])
             WITH ORDINALITY AS e(event_id, project_id, event_type, data, client_id, deliveries, subjects, filtered_out, traceparent, tracestate, n)
        ORDER BY e.n
        ON CONFLICT (project_id, client_id) WHERE client_id IS NOT NULL DO NOTHING
        RETURNING event_id, created_at
     ), q AS (",
    super::queue::enqueue::queue_insert!(
        " JOIN ev ON ev.event_id = n.event_id, set_config('posthorn.defer_notify', 'on', true)"
    ),
    ") SELECT ev.event_id, ev.created_at AS event_created_at,
              q.id, q.request_id, q.created_at, q.lease_expires_at
       FROM ev LEFT JOIN q ON q.event_id = ev.event_id"
);

/// An event inserted, once with each of its attempts (none: the attempt columns are null).
#[derive(sqlx::FromRow)]
struct Row {
    event_id: EventId,
    event_created_at: DateTime<Utc>,
    id: Option<i64>,
    request_id: Option<String>,
    created_at: Option<DateTime<Utc>>,
    lease_expires_at: Option<DateTime<Utc>>,
}

/// Links a group's span to one request's trace (its `traceparent`): installed by the
/// server when it exports spans; without it a group makes no span.
static LINK: std::sync::OnceLock<fn(&tracing::Span, &str)> = std::sync::OnceLock::new();

pub fn link_groups_with(link: fn(&tracing::Span, &str)) {
    let _ = LINK.set(link);
}

/// The span of one group's statement, linked (not parented: it serves many) to the
/// trace of every request in it.
fn group_span(lones: &[Lone]) -> tracing::Span {
    let Some(link) = LINK.get() else {
        return tracing::Span::none();
    };
    let span = tracing::info_span!(
        parent: None,
        "ingest group commit",
        otel.name = "ingest group commit",
        posthorn.events = lones.len(),
    );
    for tp in lones.iter().filter_map(|l| l.traceparent.as_deref()) {
        link(&span, tp);
    }
    span
}

/// Stores the events and their attempts in one statement (its own transaction), then
/// wakes the dispatchers once if any attempt is left to a claim. The answers are in the
/// order of `lones`. Every event leased names the same dispatcher.
pub(crate) async fn store(kept: &Kept, lones: &[Lone]) -> Result<Vec<Stored>, sqlx::Error> {
    let attempts: Vec<NewAttempt> = lones
        .iter()
        .flat_map(|l| l.attempts.iter().cloned())
        .collect();
    let taken: Vec<bool> = lones
        .iter()
        .flat_map(|l| (0..l.attempts.len()).map(|i| l.taken.get(i).copied().unwrap_or(false)))
        .collect();
    let lease = lones.iter().find_map(|l| l.lease.as_ref());
    let lease_to = lease.map(|(worker, lease)| super::queue::enqueue::LeaseTo {
        worker,
        lease: *lease,
        taken: &taken,
    });
    let column = |f: fn(&Lone) -> &str| lones.iter().map(f).collect::<Vec<&str>>();
    let optional = |f: fn(&Lone) -> Option<&str>| lones.iter().map(f).collect::<Vec<_>>();
    let mut conn = kept.get().await?;
    let rows: Result<Vec<Row>, sqlx::Error> =
        super::queue::enqueue::bind_attempts(sqlx::query_as(STORE), &attempts, lease_to.as_ref())
            .bind(column(|l| &l.event_id))
            .bind(
                lones
                    .iter()
                    .map(|l| l.project_id)
                    .collect::<Vec<ProjectId>>(),
            )
            .bind(column(|l| &l.event_type))
            .bind(column(|l| &l.data))
            .bind(optional(|l| l.client_id.as_deref()))
            .bind(
                lones
                    .iter()
                    .map(|l| l.attempts.len() as i32)
                    .collect::<Vec<i32>>(),
            )
            .bind(optional(|l| l.subjects.as_deref()))
            .bind(optional(|l| l.filtered_out.as_deref()))
            .bind(optional(|l| l.traceparent.as_deref()))
            .bind(optional(|l| l.tracestate.as_deref()))
            .fetch_all(&mut *conn)
            .instrument(group_span(lones))
            .await;
    let rows = conn.keep_if_ok(rows)?;
    let mut stored: Vec<Stored> = lones.iter().map(|_| Stored::default()).collect();
    for row in rows {
        let Some(i) = lones.iter().position(|l| l.event_id == row.event_id) else {
            continue;
        };
        stored[i].created_at = Some(row.event_created_at);
        if let (Some(id), Some(request_id), Some(created_at)) =
            (row.id, row.request_id, row.created_at)
        {
            stored[i].rows.push(Inserted {
                id: AttemptId::new(id),
                request_id,
                created_at,
                lease_expires_at: row.lease_expires_at,
            });
        }
    }
    if lones
        .iter()
        .zip(&stored)
        .any(|(l, s)| s.created_at.is_some() && l.leaves_work())
    {
        match kept.get().await {
            Ok(mut conn) => {
                super::wakeup::wake_dispatchers(&mut *conn).await;
                conn.keep();
            }
            Err(e) => tracing::warn!(error = %e, "could not wake the dispatchers"),
        }
    }
    Ok(stored)
}

/// A group of events, or on failure each of its events alone; answers in their order.
async fn store_events(
    kept: Arc<Kept>,
    lones: Vec<Lone>,
    counts: Arc<Counts>,
) -> Vec<Result<Stored, sqlx::Error>> {
    let n = lones.len();
    // The same order of idempotency keys in every group: two groups never wait for each
    // other's keys crosswise (a deadlock PostgreSQL would break by failing one).
    let mut tagged: Vec<(usize, Lone)> = lones.into_iter().enumerate().collect();
    tagged
        .sort_by(|(_, a), (_, b)| (a.project_id, &a.client_id).cmp(&(b.project_id, &b.client_id)));
    let (order, lones): (Vec<usize>, Vec<Lone>) = tagged.into_iter().unzip();
    let lease = lones.iter().find_map(|l| l.lease.as_ref());
    let one_lease = lones
        .iter()
        .all(|l| l.lease.is_none() || l.lease.as_ref() == lease);
    let mut answers: Vec<Option<Result<Stored, sqlx::Error>>> = (0..n).map(|_| None).collect();
    let together = match one_lease {
        true => store(&kept, &lones).await,
        false => Err(sqlx::Error::Protocol(
            "events leased to different dispatchers".into(),
        )),
    };
    match together {
        Ok(stored) => {
            for (i, s) in order.iter().zip(stored) {
                answers[*i] = Some(Ok(s));
            }
        }
        Err(e) if n == 1 => answers[0] = Some(Err(e)),
        Err(e) => {
            counts.failed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, events = n, "a group of events failed; storing each alone");
            for (i, lone) in order.iter().zip(&lones) {
                let alone = store(&kept, std::slice::from_ref(lone)).await;
                answers[*i] = Some(alone.map(|mut s| s.pop().unwrap_or_default()));
            }
        }
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or(Err(sqlx::Error::RowNotFound)))
        .collect()
}

/// A presented key's hit on its counter for one window, as [`api_keys::authenticate_counting`]
/// counts it.
#[derive(Debug)]
pub(crate) struct KeyHit {
    pub key: String,
    pub window_start: i64,
}

type KeyAnswer = crate::error::AppResult<Option<(KeyOwner, u32)>>;

async fn count_keys(kept: Arc<Kept>, hits: Vec<KeyHit>) -> Vec<KeyAnswer> {
    let asked: Vec<(&str, i64)> = hits
        .iter()
        .map(|h| (h.key.as_str(), h.window_start))
        .collect();
    let counted = match kept.get().await {
        Ok(mut conn) => {
            let counted = api_keys::authenticate_counting_all(&mut *conn, &asked).await;
            conn.keep_if_ok(counted)
        }
        Err(e) => Err(e.into()),
    };
    let pool = kept.pool();
    match counted {
        Ok(answers) => answers.into_iter().map(Ok).collect(),
        Err(e) if hits.len() == 1 => vec![Err(e)],
        Err(e) => {
            tracing::warn!(error = %e, hits = hits.len(), "counting a group of requests failed; counting each alone");
            let mut answers = Vec::with_capacity(hits.len());
            for h in &hits {
                answers.push(api_keys::authenticate_counting(pool, &h.key, h.window_start).await);
            }
            answers
        }
    }
}

/// The writers requests queue for (see the module's comment): one set for lone events,
/// one for API keys' hits.
pub struct GroupCommit {
    events: Writers<Lone, Result<Stored, sqlx::Error>>,
    keys: Writers<KeyHit, KeyAnswer>,
    /// Connections for these statements and the endpoint lookups before them.
    kept: Arc<Kept>,
}

impl GroupCommit {
    /// Starts `writers` writers of each kind on `pool` (each holds one of its connections
    /// while it stores a group, and keeps a few between groups). They stop once the
    /// returned handle is dropped.
    pub fn start(pool: PgPool, writers: usize) -> Arc<GroupCommit> {
        // A writer of each kind and a request's endpoint lookup each keep theirs.
        let kept = Arc::new(Kept::new(pool, writers.max(1) * 3));
        let events = {
            let kept = kept.clone();
            Writers::start(
                writers,
                MAX_GROUP,
                MAX_GROUP_BYTES,
                weight,
                move |group, counts| Box::pin(store_events(kept.clone(), group, counts)),
            )
        };
        let keys = {
            let kept = kept.clone();
            Writers::start(
                writers,
                MAX_KEY_GROUP,
                usize::MAX,
                |_: &KeyHit| 0,
                move |group, _| Box::pin(count_keys(kept.clone(), group)),
            )
        };
        Arc::new(GroupCommit { events, keys, kept })
    }

    /// The connections this set of writers keeps, for a request's other statements.
    pub(crate) fn kept(&self) -> &Kept {
        &self.kept
    }

    /// Stores the event with whatever else is queued; answers once it is committed.
    pub(crate) async fn store(&self, lone: Lone) -> Result<Stored, sqlx::Error> {
        self.events.submit(lone).await?
    }

    /// [`api_keys::authenticate_counting`], counted with the other requests queued.
    pub async fn authenticate_counting(
        &self,
        key: &str,
        window_start: i64,
    ) -> crate::error::AppResult<Option<(KeyOwner, u32)>> {
        let hit = KeyHit {
            key: key.to_string(),
            window_start,
        };
        self.keys.submit(hit).await?
    }

    /// Events submitted that no group being stored holds yet.
    pub fn waiting(&self) -> u64 {
        let c = &self.events.counts;
        c.submitted.load(Ordering::Relaxed) - c.items.load(Ordering::Relaxed)
    }

    /// Groups of events stored so far, the events in them, and the groups that failed
    /// whole (their events were then stored one by one).
    pub fn counts(&self) -> (u64, u64, u64) {
        self.events.counts.get()
    }

    /// Groups of key hits counted so far, and the hits in them.
    pub fn key_counts(&self) -> (u64, u64) {
        let (groups, hits, _) = self.keys.counts.get();
        (groups, hits)
    }
}

/// A group of key hits: one statement, so bounded like a page of rows.
const MAX_KEY_GROUP: usize = 256;

#[derive(Debug, Default)]
struct Counts {
    /// Jobs submitted; those not yet in a group being stored are waiting.
    submitted: AtomicU64,
    groups: AtomicU64,
    items: AtomicU64,
    failed: AtomicU64,
}

impl Counts {
    fn get(&self) -> (u64, u64, u64) {
        (
            self.groups.load(Ordering::Relaxed),
            self.items.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

type Handler<J, R> =
    Arc<dyn Fn(Vec<J>, Arc<Counts>) -> Pin<Box<dyn Future<Output = Vec<R>> + Send>> + Send + Sync>;

struct Job<J, R> {
    item: J,
    reply: oneshot::Sender<R>,
}

/// Writers that each take the jobs queued (up to `max` of them, or `max_weight`) and
/// hand them to the handler, whose answers (one per job, in order) go back to the jobs.
/// At most `writers` groups are stored at once; a job that finds nothing queued and a
/// writer's turn free is stored by its own request, at once, without the hops between
/// tasks (which at 200 requests/s cost more than grouping saved).
struct Writers<J, R> {
    jobs: mpsc::Sender<Job<J, R>>,
    counts: Arc<Counts>,
    turns: Arc<Semaphore>,
    handler: Handler<J, R>,
}

impl<J: Send + 'static, R: Send + 'static> Writers<J, R> {
    fn start(
        writers: usize,
        max: usize,
        max_weight: usize,
        weight: fn(&J) -> usize,
        handler: impl Fn(Vec<J>, Arc<Counts>) -> Pin<Box<dyn Future<Output = Vec<R>> + Send>>
            + Send
            + Sync
            + 'static,
    ) -> Writers<J, R> {
        let (jobs, rx) = mpsc::channel::<Job<J, R>>(4096);
        let rx = Arc::new(Mutex::new(rx));
        let counts = Arc::new(Counts::default());
        let handler: Handler<J, R> = Arc::new(handler);
        let turns = Arc::new(Semaphore::new(writers.max(1)));
        for _ in 0..writers.max(1) {
            let (rx, counts, handler, turns) =
                (rx.clone(), counts.clone(), handler.clone(), turns.clone());
            tokio::spawn(async move {
                loop {
                    let Some(group) = take(&rx, &turns, max, max_weight, weight).await else {
                        return;
                    };
                    let (turn, group) = group;
                    counts
                        .items
                        .fetch_add(group.len() as u64, Ordering::Relaxed);
                    counts.groups.fetch_add(1, Ordering::Relaxed);
                    let (items, replies): (Vec<J>, Vec<_>) =
                        group.into_iter().map(|j| (j.item, j.reply)).unzip();
                    // In a task of its own: a panic there drops its replies (their
                    // requests fail) and leaves this writer running.
                    let answers = tokio::spawn(handler(items, counts.clone())).await;
                    drop(turn);
                    for (reply, answer) in replies.into_iter().zip(answers.unwrap_or_default()) {
                        let _ = reply.send(answer);
                    }
                }
            });
        }
        Writers {
            jobs,
            counts,
            turns,
            handler,
        }
    }

    async fn submit(&self, item: J) -> Result<R, sqlx::Error> {
        self.counts.submitted.fetch_add(1, Ordering::Relaxed);
        if self.queued() == 0 {
            if let Ok(turn) = self.turns.clone().try_acquire_owned() {
                self.counts.items.fetch_add(1, Ordering::Relaxed);
                self.counts.groups.fetch_add(1, Ordering::Relaxed);
                let mut answers = (self.handler)(vec![item], self.counts.clone()).await;
                drop(turn);
                return answers.pop().ok_or(sqlx::Error::WorkerCrashed);
            }
        }
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { item, reply })
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        // A handler that panicked dropped the reply: the outcome is unknown to the
        // request, as after a connection lost mid-commit.
        answer.await.map_err(|_| sqlx::Error::WorkerCrashed)
    }

    fn queued(&self) -> usize {
        self.jobs.max_capacity() - self.jobs.capacity()
    }
}

/// Waits for one job and a turn, then takes what else is queued by then, within the
/// bounds: jobs that came while every turn was taken wait for the next group.
async fn take<J, R>(
    rx: &Mutex<mpsc::Receiver<Job<J, R>>>,
    turns: &Arc<Semaphore>,
    max: usize,
    max_weight: usize,
    weight: fn(&J) -> usize,
) -> Option<(OwnedSemaphorePermit, Vec<Job<J, R>>)> {
    let mut rx = rx.lock().await;
    let first = rx.recv().await?;
    let turn = turns.clone().acquire_owned().await.ok()?;
    let mut total = weight(&first.item);
    let mut group = vec![first];
    while group.len() < max && total < max_weight {
        match rx.try_recv() {
            Ok(job) => {
                total += weight(&job.item);
                group.push(job);
            }
            Err(_) => break,
        }
    }
    Some((turn, group))
}
