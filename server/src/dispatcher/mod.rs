//! The dispatcher: claims due attempts from the queue, sends them, records
//! the outcomes. Any number may run against one database; leases and `SKIP LOCKED` keep
//! any two live dispatchers from sending the same attempt.

mod brokers;
mod claim_loop;
pub mod egress;
pub mod guard;
mod handoff;
mod launch;
mod leases;
mod outcome_writer;
pub mod sender;

use app::core::{AttemptId, EndpointId, ProjectId};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use app::{cfg::Config, db::queue};
use sqlx::{postgres::PgListener, PgPool};
use tokio::{
    sync::{mpsc, watch, Notify, Semaphore},
    task::{JoinHandle, JoinSet},
};

use crate::metrics::Metrics;
use claim_loop::{ClaimLoop, Pacing};
use handoff::LocalHandoff;
use launch::Launch;
use outcome_writer::Report;
use queue::Claimed;
use sender::Sender;

/// A claimed row not yet recorded or handed back.
#[derive(Clone, Copy, Debug)]
struct HeldRow {
    endpoint_id: EndpointId,
    project_id: ProjectId,
    /// Waiting for or holding a throttled endpoint's start slot.
    throttled: bool,
    /// Its request has ended and its outcome waits for the writer. The hand-off no longer
    /// counts it against its endpoint's and project's shares (16 slots held through the
    /// write capped one endpoint at ~2,000 deliveries/s under load); the claim, which
    /// bounds what a backlog takes, still does, as the queue shows it `in_flight`. The
    /// process's room counts it either way.
    finished: bool,
}

impl HeldRow {
    fn new(endpoint_id: EndpointId, project_id: ProjectId, throttled: bool) -> HeldRow {
        HeldRow {
            endpoint_id,
            project_id,
            throttled,
            finished: false,
        }
    }

    /// Its request is in flight (the hand-off's count of the shares).
    fn in_flight(&self) -> bool {
        !self.finished
    }
}

/// Rows claimed and not yet recorded, by id.
type Held = Arc<Mutex<HashMap<AttemptId, HeldRow>>>;

/// The tasks that run beside the claim loop until the dispatcher stops.
struct Background {
    listener: JoinHandle<()>,
    writer: JoinHandle<()>,
    renewer: JoinHandle<()>,
    recoverer: JoinHandle<()>,
    sampler: JoinHandle<()>,
}

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
        metrics.watch_pool("dispatcher", &pool);
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
    /// [`app::db::queue::handoff`]); it takes them while it runs.
    pub fn handoff(&mut self) -> Arc<dyn app::db::queue::handoff::Handoff> {
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
        let (handoff, handed) = match self.handoff.take() {
            Some((h, rx)) => (Some(h), rx),
            None => (None, mpsc::unbounded_channel().1),
        };
        if let Some(h) = &handoff {
            h.open.store(true, std::sync::atomic::Ordering::Release);
        }
        let launch = Launch {
            global: Arc::new(Semaphore::new(self.cfg.concurrency.max(1))),
            per_endpoint: HashMap::new(),
            per_endpoint_concurrency: self.cfg.per_endpoint_concurrency.max(1),
            sender,
            metrics: self.metrics.clone(),
            shutdown: shutdown.clone(),
            probe: self.probe.clone(),
            reports: results_tx.clone(),
            held: held.clone(),
            tasks: JoinSet::new(),
        };
        let progress = Arc::new(Notify::new());
        let recorded = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let background = self.start_background(&wake, results_rx, &progress, &recorded);
        tracing::info!(worker = %self.worker, "dispatcher started");
        let mut claim_loop = ClaimLoop {
            cfg: self.cfg.clone(),
            worker: self.worker.clone(),
            claims: app::db::kept::Kept::new(self.claims.clone(), 1),
            held: held.clone(),
            max_held,
            handoff,
            handed,
            launch,
            progress,
            recorded,
            wake,
            pacing: Pacing::new(std::time::Instant::now()),
        };
        while !*shutdown.borrow() {
            claim_loop.turn(&mut shutdown).await;
        }
        self.stop(claim_loop, results_tx, background).await;
    }

    /// The tasks beside the claim loop: LISTEN for new rows, the outcome writer, the
    /// lease renewer and the recovery of expired leases.
    fn start_background(
        &self,
        wake: &Arc<Notify>,
        results_rx: mpsc::UnboundedReceiver<Report>,
        progress: &Arc<Notify>,
        recorded: &Arc<std::sync::atomic::AtomicU64>,
    ) -> Background {
        let listener = tokio::spawn(listen(self.pool.clone(), wake.clone()));
        // The writer's statements find rows by key too, in a queue whose statistics lag
        // (a seq scan past the dead rows of the last second cost 0.9 ms an outcome).
        let writer = tokio::spawn(outcome_writer::write_outcomes(
            queue::claim_pool(&self.pool),
            self.worker.clone(),
            results_rx,
            self.held.clone(),
            progress.clone(),
            recorded.clone(),
            self.metrics.clone(),
        ));
        let renewer = tokio::spawn(leases::renew(
            self.pool.clone(),
            self.worker.clone(),
            self.held.clone(),
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
        let sampler = tokio::spawn(sample_queue(self.pool.clone(), self.metrics.clone()));
        Background {
            listener,
            writer,
            renewer,
            recoverer,
            sampler,
        }
    }

    /// Stops claiming, lets in-flight attempts finish (bounded), records them, and hands
    /// back anything left.
    async fn stop(
        self,
        claim_loop: ClaimLoop,
        results_tx: mpsc::UnboundedSender<Report>,
        background: Background,
    ) {
        let ClaimLoop {
            handoff,
            mut handed,
            launch,
            held,
            ..
        } = claim_loop;
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
        let _ = background.writer.await;
        background.listener.abort();
        background.renewer.abort();
        background.recoverer.abort();
        background.sampler.abort();
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

/// How often the dispatcher counts the due queue for /metrics: a scrape reads the last
/// count, so a million waiting attempts cost one count per interval, not one per scrape.
const QUEUE_SAMPLE_EVERY: Duration = Duration::from_secs(15);

async fn sample_queue(pool: PgPool, metrics: Arc<Metrics>) {
    let mut every = tokio::time::interval(QUEUE_SAMPLE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        match queue::queue_stats(&pool).await {
            Ok((due, oldest)) => {
                metrics.sample_queue(due, Duration::from_secs_f64(oldest.max(0.0)))
            }
            Err(e) => {
                metrics.sample_failed();
                tracing::debug!(error = %e, "queue sample failed");
            }
        }
    }
}
