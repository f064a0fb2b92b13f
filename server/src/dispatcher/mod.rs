//! The dispatcher: claims due attempts from the queue, sends them, records
//! the outcomes. Any number may run against one database; leases and `SKIP LOCKED` keep
//! any two live dispatchers from sending the same attempt.

pub mod egress;
pub mod guard;
mod handoff;
mod launch;
mod leases;
mod outcomes;
pub mod queue;
pub mod sender;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use app::cfg::Config;
use sqlx::{postgres::PgListener, PgPool};
use tokio::{
    sync::{mpsc, watch, Notify, Semaphore},
    task::JoinSet,
};

use crate::metrics::Metrics;
use handoff::LocalHandoff;
use launch::Launch;
use outcomes::Report;
use queue::Claimed;
use sender::Sender;

/// A claimed row not yet recorded or handed back.
#[derive(Clone, Copy, Debug)]
struct HeldRow {
    endpoint_id: i64,
    project_id: i64,
    /// Waiting for or holding a throttled endpoint's start slot.
    throttled: bool,
}

/// Rows claimed and not yet recorded, by id.
type Held = Arc<Mutex<HashMap<i64, HeldRow>>>;

/// Runs inside each attempt's task just before it is sent; tests use it to inject faults.
pub type Probe = Arc<dyn Fn(&queue::Claimed) + Send + Sync>;

pub struct Dispatcher {
    pool: PgPool,
    /// The claim's own connection (see [`queue::claim_pool`]).
    claims: PgPool,
    cfg: Arc<Config>,
    metrics: Arc<Metrics>,
    worker: String,
    probe: Option<Probe>,
    held: Held,
    handoff: Option<(Arc<LocalHandoff>, mpsc::UnboundedReceiver<Vec<Claimed>>)>,
}

impl Dispatcher {
    pub fn new(pool: PgPool, cfg: Arc<Config>, metrics: Arc<Metrics>) -> Dispatcher {
        let worker = format!("{}-{}", std::process::id(), ulid::Ulid::new());
        Dispatcher {
            claims: queue::claim_pool(&pool),
            pool,
            cfg,
            metrics,
            worker,
            probe: None,
            held: Held::default(),
            handoff: None,
        }
    }

    /// Lets ingest in this process hand fresh attempts straight to this dispatcher (see
    /// [`app::db::handoff`]); it takes them while it runs.
    pub fn handoff(&mut self) -> Arc<dyn app::db::handoff::Handoff> {
        let (handoff, _) = self.handoff.get_or_insert_with(|| {
            LocalHandoff::new(
                self.worker.clone(),
                self.cfg.lease,
                self.held.clone(),
                self.cfg.concurrency.max(1) * 2,
                self.cfg.per_endpoint_concurrency.max(1),
                self.cfg.project_concurrency.max(1),
            )
        });
        handoff.clone()
    }

    /// Runs `probe` in every attempt's task before the send (fault injection in tests).
    pub fn with_probe(mut self, probe: Probe) -> Dispatcher {
        self.probe = Some(probe);
        self
    }

    /// Runs until `shutdown` turns true, then stops claiming, lets in-flight attempts
    /// finish (bounded), records them, and hands back anything left.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let Some(dispatch_key) = dispatch_key(&self.pool, &mut shutdown).await else {
            return;
        };
        let sender = match Sender::new(self.cfg.clone(), dispatch_key) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                tracing::error!(error = %e, "cannot build the HTTP client; dispatcher not started");
                return;
            }
        };
        let wake = Arc::new(Notify::new());
        let held = self.held.clone();
        let max_held = self.cfg.concurrency.max(1) * 2;
        let (results_tx, results_rx) = mpsc::unbounded_channel::<Report>();
        let (handoff, mut handed) = match self.handoff.take() {
            Some((h, rx)) => (Some(h), rx),
            None => (None, mpsc::unbounded_channel().1),
        };
        if let Some(h) = &handoff {
            h.open.store(true, std::sync::atomic::Ordering::Release);
        }
        let mut launch = Launch {
            global: Arc::new(Semaphore::new(self.cfg.concurrency.max(1))),
            per_endpoint: HashMap::new(),
            per_endpoint_concurrency: self.cfg.per_endpoint_concurrency.max(1),
            sender,
            metrics: self.metrics.clone(),
            shutdown: shutdown.clone(),
            probe: self.probe.clone(),
            reports: results_tx.clone(),
            tasks: JoinSet::new(),
        };
        let progress = Arc::new(Notify::new());
        // Outcome batches recorded so far: a claim that raced one can tell.
        let recorded = Arc::new(std::sync::atomic::AtomicU64::new(0));

        let listener = tokio::spawn(listen(self.pool.clone(), wake.clone()));
        // The writer's statements find rows by key too, in a queue whose statistics lag
        // (a seq scan past the dead rows of the last second cost 0.9 ms an outcome).
        let writer = tokio::spawn(outcomes::write_outcomes(
            queue::claim_pool(&self.pool),
            self.worker.clone(),
            results_rx,
            held.clone(),
            progress.clone(),
            recorded.clone(),
        ));
        let renewer = tokio::spawn(leases::renew(
            self.pool.clone(),
            self.worker.clone(),
            held.clone(),
            self.cfg.lease,
        ));
        // Finding expired leases reads the whole queue (an index naming the lease would
        // cost every claim an index entry): 50 ms beside 100,000 waiting rows. A quarter
        // of the lease apart, a lost attempt waits at most a lease and a quarter.
        let recovery_every =
            (self.cfg.lease / 4).clamp(Duration::from_secs(1), Duration::from_secs(15));
        let recoverer = tokio::spawn(leases::recover(
            self.pool.clone(),
            recovery_every,
            wake.clone(),
        ));
        tracing::info!(worker = %self.worker, "dispatcher started");
        let claims = app::db::kept::Kept::new(self.claims.clone(), 1);

        // When a claim last left an endpoint or project at its share. For a second after,
        // its backlog likely still fills the oldest due rows (the room promised to
        // ingest meanwhile can make the next claim look uncapped).
        let mut last_capped: Option<std::time::Instant> = None;
        // The project every row of the last claim came from, if there was one.
        let mut sole_project: Option<i64> = None;
        // While one project fills claim after claim, one claim every PASS_OVER_EVERY
        // passes it over and takes everyone else's due rows: its burst of 150,000
        // attempts (3 batches to 500 endpoints) otherwise held another project's events
        // for the 20 s it took to send, its share never full at a claim.
        let mut pass_over_next: Option<i64> = None;
        let mut last_pass_over = std::time::Instant::now();
        loop {
            if *shutdown.borrow() {
                break;
            }
            while launch.tasks.try_join_next().is_some() {}
            while let Ok(rows) = handed.try_recv() {
                launch.all(rows);
            }
            let (room, limit, shares, sole_project_room) = {
                let h = held.lock().unwrap_or_else(|e| e.into_inner());
                let promised = handoff.as_ref().map(|p| p.promised()).unwrap_or_default();
                let reserved = handoff.as_ref().map_or(0, |h| h.reserved());
                let room = max_held.saturating_sub(h.len() + reserved) as i64;
                let shares = Shares::of(h.values(), promised);
                let sole_room = sole_project.map(|p| {
                    let held = shares
                        .projects
                        .iter()
                        .position(|q| *q == p)
                        .map_or(0, |i| shares.project_held[i]);
                    self.cfg.project_concurrency.max(1) as i64 - held
                });
                let limit = room.min(self.cfg.batch_size);
                // Counted and marked under one lock: a reservation made while the claim
                // runs leaves the claim its room (see `LocalHandoff::reserve`).
                if let (Some(handoff), true) = (&handoff, room > 0) {
                    handoff.begin_claim(
                        limit.max(0) as usize,
                        &shares.endpoints,
                        &shares.endpoint_held,
                        &shares.projects,
                        &shares.project_held,
                    );
                }
                (room, limit, shares, sole_room)
            };
            if room == 0 {
                tokio::select! {
                    Some(rows) = handed.recv() => launch.all(rows),
                    _ = progress.notified() => {}
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                    _ = shutdown.changed() => {}
                }
                continue;
            }
            let claim_started = std::time::Instant::now();
            let recorded_before = recorded.load(std::sync::atomic::Ordering::Acquire);
            let caps = queue::Caps {
                per_endpoint: self.cfg.per_endpoint_concurrency.max(1) as i64,
                per_project: self.cfg.project_concurrency.max(1) as i64,
                endpoints: &shares.endpoints,
                endpoint_held: &shares.endpoint_held,
                projects: &shares.projects,
                project_held: &shares.project_held,
                throttled_held: shares.throttled_held,
                backlogged: last_capped.is_some_and(|at| at.elapsed() < Duration::from_secs(1)),
                sole_project_room,
                pass_over: pass_over_next.take(),
            };
            let passing = caps.pass_over.is_some();
            if passing {
                last_pass_over = std::time::Instant::now();
            }
            let claimed = match claim(&claims, &self.worker, limit, self.cfg.lease, &caps).await {
                Ok(rows) => rows,
                Err(e) => {
                    if let Some(handoff) = &handoff {
                        let _h = held.lock().unwrap_or_else(|e| e.into_inner());
                        handoff.end_claim();
                    }
                    tracing::warn!(error = %e, "claim failed; retrying in 1 s");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = shutdown.changed() => {}
                    }
                    continue;
                }
            };
            let got = claimed.len() as i64;
            sole_project = claimed
                .first()
                .map(|r| r.project_id)
                .filter(|p| claimed.iter().all(|r| r.project_id == *p));
            if !passing && last_pass_over.elapsed() >= PASS_OVER_EVERY {
                pass_over_next = sole_project;
            }
            // Booking a throttled endpoint's slots may have crowded others out of this
            // claim; the next claim skips that endpoint, so it comes at once.
            let booked = claimed.iter().any(|r| r.start_at.is_some());
            slow("claim", claim_started);
            {
                let mut h = held.lock().unwrap_or_else(|e| e.into_inner());
                for row in &claimed {
                    h.insert(
                        row.id,
                        HeldRow {
                            endpoint_id: row.endpoint_id,
                            project_id: row.project_id,
                            throttled: row.start_at.is_some(),
                        },
                    );
                }
                if let Some(handoff) = &handoff {
                    handoff.end_claim();
                }
            }
            // Rows this claim passed over because their endpoint or project is at its
            // share become claimable as soon as an outcome frees a slot.
            let capped = {
                let h = held.lock().unwrap_or_else(|e| e.into_inner());
                let now = Shares::of(h.values(), Default::default());
                queue::Caps {
                    endpoints: &now.endpoints,
                    endpoint_held: &now.endpoint_held,
                    projects: &now.projects,
                    project_held: &now.project_held,
                    ..caps
                }
                .blocked_somewhere()
            };
            if capped {
                last_capped = Some(std::time::Instant::now());
            }
            launch.all(claimed);
            launch.forget_idle_endpoints();
            // An outcome recorded while this claim ran freed a slot it could not see.
            let raced = recorded.load(std::sync::atomic::Ordering::Acquire) != recorded_before;
            // A claim that passed a project over found what others had; the project's
            // own rows come with the next claim, at once.
            if got < limit && !booked && !passing {
                // Claims woken by freed slots are spaced out by a few ms, so a backlog
                // answering one outcome at a time gets a claim per handful of outcomes,
                // not one per outcome (each claim costs the database a scan).
                let sleep = if raced {
                    REFILL_PAUSE
                } else {
                    match next_due(&claims).await {
                        Ok(Some(at)) => (at - chrono::Utc::now())
                            .to_std()
                            .unwrap_or_default()
                            .clamp(Duration::from_millis(5), Duration::from_secs(1)),
                        _ => Duration::from_secs(1),
                    }
                };
                // Attempts handed over from ingest are launched as they come without a
                // claim: they leave nothing new in the queue, and a claim (with its
                // `next_due`) per handed event was two statements of every event's cost.
                // A freed slot brings the claim forward to a few ms from now, and a
                // new attempt (a wake-up) to now: the pause that lets outcomes gather
                // never holds back another tenant's fresh event.
                let mut until = tokio::time::Instant::now() + sleep;
                let mut refill = false;
                loop {
                    tokio::select! {
                        Some(rows) = handed.recv() => {
                            launch.all(rows);
                            while launch.tasks.try_join_next().is_some() {}
                            continue;
                        }
                        _ = progress.notified(), if capped && !refill => {
                            refill = true;
                            until = until.min(tokio::time::Instant::now() + REFILL_PAUSE);
                            continue;
                        }
                        _ = wake.notified() => {}
                        _ = tokio::time::sleep_until(until) => {}
                        _ = shutdown.changed() => {}
                    }
                    break;
                }
            }
        }

        if let Some(h) = &handoff {
            h.open.store(false, std::sync::atomic::Ordering::Release);
        }
        let mut tasks = launch.tasks;
        tracing::info!(
            in_flight = tasks.len(),
            "dispatcher stopping: finishing in-flight attempts"
        );
        let grace = self.cfg.read_timeout + self.cfg.connect_timeout + Duration::from_secs(1);
        let drained = tokio::time::timeout(grace.min(Duration::from_secs(25)), async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tasks.abort_all();
            // Aborted tasks hand their rows back as they are dropped.
            while tasks.join_next().await.is_some() {}
        }
        // Rows handed over after the loop ended are released below with the rest.
        handed.close();
        while let Ok(rows) = handed.try_recv() {
            let mut h = held.lock().unwrap_or_else(|e| e.into_inner());
            for row in rows {
                h.remove(&row.id);
            }
        }
        drop(launch.reports);
        drop(results_tx);
        let _ = writer.await;
        listener.abort();
        renewer.abort();
        recoverer.abort();
        match queue::release_all(&self.pool, &self.worker).await {
            Ok(n) if n > 0 => {
                tracing::info!(rows = n, "handed unfinished attempts back to the queue")
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not hand back attempts; their leases will expire")
            }
        }
        tracing::info!("dispatcher stopped");
    }
}

/// The key that signs the passes of deliveries to Posthorn's own bins, read (or made)
/// once; retried while the database is out of reach. None if told to stop meanwhile.
async fn dispatch_key(pool: &PgPool, shutdown: &mut watch::Receiver<bool>) -> Option<Vec<u8>> {
    loop {
        match app::db::server_keys::get_or_create(pool, app::db::server_keys::DISPATCH).await {
            Ok(key) => return Some(key),
            Err(e) => tracing::warn!(error = %e, "cannot read the dispatch key; retrying in 1 s"),
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => return None,
        }
    }
}

/// LISTEN for new pending rows; reconnects after losing the database.
async fn listen(pool: PgPool, wake: Arc<Notify>) {
    loop {
        match PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if let Err(e) = listener.listen("posthorn_pending").await {
                    tracing::warn!(error = %e, "LISTEN failed");
                } else {
                    loop {
                        match listener.recv().await {
                            Ok(_) => wake.notify_one(),
                            Err(e) => {
                                tracing::warn!(error = %e, "notification connection lost");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot open the notification connection"),
        }
        wake.notify_one();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// How long a claim woken by freed slots waits for more outcomes to free theirs. Short:
/// an endpoint's share comes back a batch of outcomes at a time, and the pause bounds
/// how fast one endpoint's backlog drains (16 slots per pause and claim: 25 ms let a
/// fast endpoint take ~450 attempts/s, too few to catch up after a stall at 500/s).
const REFILL_PAUSE: Duration = Duration::from_millis(5);

/// How often, at most, a claim passes over the project that filled the claims before it.
/// Each costs a walk endpoint by endpoint (one index descent per endpoint with waiting
/// rows); twenty a second bound another project's wait behind a burst to about 50 ms.
const PASS_OVER_EVERY: Duration = Duration::from_millis(50);

/// How many held rows each endpoint and project has, as the claim's arguments.
#[derive(Default)]
struct Shares {
    endpoints: Vec<i64>,
    endpoint_held: Vec<i64>,
    projects: Vec<i64>,
    project_held: Vec<i64>,
    throttled_held: bool,
}

impl Shares {
    /// Held rows plus the room promised to ingest (by endpoint, by project).
    fn of<'a>(
        rows: impl Iterator<Item = &'a HeldRow>,
        promised: (HashMap<i64, i64>, HashMap<i64, i64>),
    ) -> Shares {
        let (mut per_endpoint, mut per_project) = promised;
        let mut throttled_held = false;
        for r in rows {
            throttled_held |= r.throttled;
            *per_endpoint.entry(r.endpoint_id).or_default() += 1;
            *per_project.entry(r.project_id).or_default() += 1;
        }
        let (endpoints, endpoint_held) = per_endpoint.into_iter().unzip();
        let (projects, project_held) = per_project.into_iter().unzip();
        Shares {
            endpoints,
            endpoint_held,
            projects,
            project_held,
            throttled_held,
        }
    }
}

/// Milliseconds from now until `at` (negative once it has passed).
fn ms_until(at: chrono::DateTime<chrono::Utc>) -> f64 {
    (at - chrono::Utc::now())
        .num_microseconds()
        .map_or(f64::MAX, |us| us as f64 / 1000.0)
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// Database round trips of the dispatcher normally take a few milliseconds; a slow one
/// delays every attempt behind it, so it is worth a line in the log.
fn slow(what: &str, since: std::time::Instant) {
    let took = since.elapsed();
    if took > Duration::from_millis(100) {
        tracing::warn!(took_ms = took.as_millis() as u64, "{what} was slow");
    }
}

/// [`queue::claim_due`] on the claim's kept connection.
async fn claim(
    claims: &app::db::kept::Kept,
    worker: &str,
    limit: i64,
    lease: Duration,
    caps: &queue::Caps<'_>,
) -> Result<Vec<queue::Claimed>, sqlx::Error> {
    let mut conn = claims.get().await?;
    let claimed = queue::claim_due(&mut *conn, worker, limit, lease, caps).await;
    conn.keep_if_ok(claimed)
}

/// [`queue::next_due`] on the claim's kept connection.
async fn next_due(
    claims: &app::db::kept::Kept,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, sqlx::Error> {
    let mut conn = claims.get().await?;
    let next = queue::next_due(&mut *conn).await;
    conn.keep_if_ok(next)
}
