//! Lone events of concurrent requests stored together: one statement and one commit for
//! every request waiting at that moment, instead of one WAL flush each.
//!
//! A request answers only once its event is durable, so on one machine the public API was
//! bound by commits: at 1,100–1,800 single-event requests/s its backends waited on
//! `WALSync` and the `WALWrite` lock, with the CPU a quarter idle. Requests now queue their
//! checked event here; each of a few writers takes whatever is queued when it is free (a
//! request alone goes at once: nothing waits for a group to fill) and stores it with
//! [`store`]. A group that fails is stored again event by event, so an event the database
//! refuses fails its own request only, never its neighbours'.

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot, Mutex};

use super::attempts::{Inserted, NewAttempt};

/// One event without an ordering key, checked and fanned out, ready to store.
#[derive(Debug)]
pub(crate) struct Lone {
    pub project_id: i64,
    pub event_id: String,
    pub event_type: String,
    /// Valid JSON text, stored byte for byte.
    pub data: String,
    pub client_id: Option<String>,
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

/// A group holds at most this many events, and this many bytes of payload: a group is
/// one statement, and one tenant's large payloads must not make everyone's slow.
pub const MAX_GROUP: usize = 100;
pub const MAX_GROUP_BYTES: usize = 2 * 1024 * 1024;

/// The statement behind every lone event: the events and all their attempts, one commit.
/// Events are inserted in the order given (a repeated idempotency key keeps the first),
/// attempts only for the events inserted.
const STORE: &str = concat!(
    "WITH ev AS (
        INSERT INTO events (event_id, project_id, event_type, data, client_id, deliveries, ordering_key)
        SELECT e.event_id, e.project_id, e.event_type, e.data::json, e.client_id, e.deliveries, NULL
        FROM unnest($18::text[], $19::bigint[], $20::text[], $21::text[], $22::text[], $23::int[])
             WITH ORDINALITY AS e(event_id, project_id, event_type, data, client_id, deliveries, n)
        ORDER BY e.n
        ON CONFLICT (project_id, client_id) WHERE client_id IS NOT NULL DO NOTHING
        RETURNING event_id, created_at
     ), q AS (",
    super::attempts::queue_insert!(
        " JOIN ev ON ev.event_id = n.event_id, set_config('posthorn.defer_notify', 'on', true)"
    ),
    ") SELECT ev.event_id, ev.created_at AS event_created_at,
              q.id, q.request_id, q.created_at, q.lease_expires_at
       FROM ev LEFT JOIN q ON q.event_id = ev.event_id"
);

/// An event inserted, once with each of its attempts (none: the attempt columns are null).
#[derive(sqlx::FromRow)]
struct Row {
    event_id: String,
    event_created_at: DateTime<Utc>,
    id: Option<i64>,
    request_id: Option<String>,
    created_at: Option<DateTime<Utc>>,
    lease_expires_at: Option<DateTime<Utc>>,
}

/// Stores the events and their attempts in one statement (its own transaction), then
/// wakes the dispatchers once if any attempt is left to a claim. The answers are in the
/// order of `lones`. Every event leased names the same dispatcher.
pub(crate) async fn store(pool: &PgPool, lones: &[Lone]) -> Result<Vec<Stored>, sqlx::Error> {
    let attempts: Vec<NewAttempt> = lones
        .iter()
        .flat_map(|l| l.attempts.iter().cloned())
        .collect();
    let taken: Vec<bool> = lones
        .iter()
        .flat_map(|l| (0..l.attempts.len()).map(|i| l.taken.get(i).copied().unwrap_or(false)))
        .collect();
    let lease = lones.iter().find_map(|l| l.lease.as_ref());
    let lease_to = lease.map(|(worker, lease)| super::attempts::LeaseTo {
        worker,
        lease: *lease,
        taken: &taken,
    });
    let column = |f: fn(&Lone) -> &str| lones.iter().map(f).collect::<Vec<&str>>();
    let rows: Vec<Row> =
        super::attempts::bind_attempts(sqlx::query_as(STORE), &attempts, lease_to.as_ref())
            .bind(column(|l| &l.event_id))
            .bind(lones.iter().map(|l| l.project_id).collect::<Vec<i64>>())
            .bind(column(|l| &l.event_type))
            .bind(column(|l| &l.data))
            .bind(
                lones
                    .iter()
                    .map(|l| l.client_id.as_deref())
                    .collect::<Vec<Option<&str>>>(),
            )
            .bind(
                lones
                    .iter()
                    .map(|l| l.attempts.len() as i32)
                    .collect::<Vec<i32>>(),
            )
            .fetch_all(pool)
            .await?;
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
                id,
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
        super::wakeup::wake_dispatchers(pool).await;
    }
    Ok(stored)
}

struct Job {
    lone: Lone,
    reply: oneshot::Sender<Result<Stored, sqlx::Error>>,
}

/// The writers lone events queue for (see the module's comment).
pub struct GroupCommit {
    jobs: mpsc::Sender<Job>,
    counts: Arc<Counts>,
}

/// Groups stored so far, the events in them, and the groups that failed whole (their
/// events were then stored one by one).
#[derive(Debug, Default)]
pub struct Counts {
    pub groups: AtomicU64,
    pub events: AtomicU64,
    pub failed: AtomicU64,
}

impl GroupCommit {
    /// Starts `writers` writers on `pool` (each holds one of its connections while it
    /// stores a group). They stop once the returned handle and every clone are dropped.
    pub fn start(pool: PgPool, writers: usize) -> Arc<GroupCommit> {
        let (jobs, rx) = mpsc::channel::<Job>(4096);
        let rx = Arc::new(Mutex::new(rx));
        let counts = Arc::new(Counts::default());
        for _ in 0..writers.max(1) {
            tokio::spawn(write(pool.clone(), rx.clone(), counts.clone()));
        }
        Arc::new(GroupCommit { jobs, counts })
    }

    /// Events queued and not yet taken by a writer.
    pub fn queued(&self) -> usize {
        self.jobs.max_capacity() - self.jobs.capacity()
    }

    /// (groups, events, failed groups) so far.
    pub fn counts(&self) -> (u64, u64, u64) {
        let c = &self.counts;
        (
            c.groups.load(Ordering::Relaxed),
            c.events.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
        )
    }

    /// Stores the event with whatever else is queued; answers once it is committed.
    pub(crate) async fn submit(&self, lone: Lone) -> Result<Stored, sqlx::Error> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { lone, reply })
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        // A writer that panicked dropped the reply: the event's fate is unknown to the
        // request, as after a connection lost mid-commit.
        answer.await.map_err(|_| sqlx::Error::WorkerCrashed)?
    }
}

/// One writer: takes what is queued (up to a group's bounds), stores it, answers.
async fn write(pool: PgPool, rx: Arc<Mutex<mpsc::Receiver<Job>>>, counts: Arc<Counts>) {
    loop {
        let group = {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else {
                return;
            };
            let mut bytes = first.lone.data.len();
            let mut group = vec![first];
            while group.len() < MAX_GROUP && bytes < MAX_GROUP_BYTES {
                match rx.try_recv() {
                    Ok(job) => {
                        bytes += job.lone.data.len();
                        group.push(job);
                    }
                    Err(_) => break,
                }
            }
            group
        };
        // In a task of its own: a panic there drops its replies (their requests fail)
        // and leaves this writer running.
        counts.groups.fetch_add(1, Ordering::Relaxed);
        counts
            .events
            .fetch_add(group.len() as u64, Ordering::Relaxed);
        let (pool, counts) = (pool.clone(), counts.clone());
        let _ = tokio::spawn(async move { store_group(&pool, group, &counts).await }).await;
    }
}

/// Stores a group, or on failure each of its events alone, and answers every request.
async fn store_group(pool: &PgPool, mut group: Vec<Job>, counts: &Counts) {
    // The same order of idempotency keys in every group: two groups never wait for each
    // other's keys crosswise (a deadlock PostgreSQL would break by failing one).
    group.sort_by(|a, b| {
        (a.lone.project_id, &a.lone.client_id).cmp(&(b.lone.project_id, &b.lone.client_id))
    });
    let lease = group.iter().find_map(|j| j.lone.lease.clone());
    let (together, apart): (Vec<Job>, Vec<Job>) = group
        .into_iter()
        .partition(|j| j.lone.lease.is_none() || j.lone.lease == lease);
    let mut alone = apart;
    if !together.is_empty() {
        let (lones, replies): (Vec<Lone>, Vec<_>) =
            together.into_iter().map(|j| (j.lone, j.reply)).unzip();
        match store(pool, &lones).await {
            Ok(stored) => {
                for (reply, s) in replies.into_iter().zip(stored) {
                    let _ = reply.send(Ok(s));
                }
            }
            Err(e) if lones.len() == 1 => {
                let _ = replies.into_iter().next().map(|r| r.send(Err(e)));
            }
            Err(e) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, events = lones.len(), "a group of events failed; storing each alone");
                alone.extend(
                    lones
                        .into_iter()
                        .zip(replies)
                        .map(|(lone, reply)| Job { lone, reply }),
                );
            }
        }
    }
    for job in alone {
        let stored = store(pool, std::slice::from_ref(&job.lone)).await;
        let _ = job
            .reply
            .send(stored.map(|mut s| s.pop().unwrap_or_default()));
    }
}
