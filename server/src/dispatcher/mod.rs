//! The dispatcher: claims due attempts from the deliveries table, sends them, records
//! the outcomes. Any number may run against one database; leases and `SKIP LOCKED` keep
//! any two live dispatchers from sending the same attempt.

pub mod guard;
pub mod queue;
pub mod sender;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use app::cfg::Config;
use rand::Rng;
use sqlx::{postgres::PgListener, PgPool};
use tokio::{
    sync::{mpsc, watch, Notify, Semaphore},
    task::JoinSet,
};

use crate::metrics::Metrics;
use queue::Outcome;
use sender::Sender;

/// Rows claimed and not yet recorded, by id, with their endpoint.
type Held = Arc<Mutex<HashMap<i64, i64>>>;

pub struct Dispatcher {
    pool: PgPool,
    cfg: Arc<Config>,
    metrics: Arc<Metrics>,
    worker: String,
}

impl Dispatcher {
    pub fn new(pool: PgPool, cfg: Arc<Config>, metrics: Arc<Metrics>) -> Dispatcher {
        let worker = format!("{}-{}", std::process::id(), ulid::Ulid::new());
        Dispatcher {
            pool,
            cfg,
            metrics,
            worker,
        }
    }

    /// Runs until `shutdown` turns true, then stops claiming, lets in-flight attempts
    /// finish (bounded), records them, and hands back anything left.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let sender = match Sender::new(self.cfg.clone()) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                tracing::error!(error = %e, "cannot build the HTTP client; dispatcher not started");
                return;
            }
        };
        let wake = Arc::new(Notify::new());
        let held: Held = Arc::default();
        let global = Arc::new(Semaphore::new(self.cfg.concurrency.max(1)));
        let mut per_endpoint: HashMap<i64, Arc<Semaphore>> = HashMap::new();
        let max_held = self.cfg.concurrency.max(1) * 2;
        let (results_tx, results_rx) = mpsc::unbounded_channel::<Outcome>();
        let progress = Arc::new(Notify::new());

        let listener = tokio::spawn(listen(self.pool.clone(), wake.clone()));
        let writer = tokio::spawn(write_outcomes(
            self.pool.clone(),
            self.worker.clone(),
            results_rx,
            held.clone(),
            progress.clone(),
        ));
        let renewer = tokio::spawn(renew(
            self.pool.clone(),
            self.worker.clone(),
            held.clone(),
            self.cfg.lease,
        ));
        let mut tasks = JoinSet::new();
        let mut last_recovery = std::time::Instant::now() - Duration::from_secs(60);
        tracing::info!(worker = %self.worker, "dispatcher started");

        loop {
            if *shutdown.borrow() {
                break;
            }
            while tasks.try_join_next().is_some() {}
            if last_recovery.elapsed() > Duration::from_secs(2) {
                last_recovery = std::time::Instant::now();
                let recovered = queue::recover_expired(&self.pool).await;
                slow("lease recovery", last_recovery);
                match recovered {
                    Ok(n) if n > 0 => {
                        tracing::warn!(rows = n, "recovered attempts whose lease ran out")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "lease recovery failed"),
                }
            }
            let (held_now, saturated) = {
                let h = held.lock().expect("held lock");
                let mut per: HashMap<i64, usize> = HashMap::new();
                for ep in h.values() {
                    *per.entry(*ep).or_default() += 1;
                }
                let sat: Vec<i64> = per
                    .into_iter()
                    .filter(|(_, n)| *n >= self.cfg.per_endpoint_concurrency)
                    .map(|(ep, _)| ep)
                    .collect();
                (h.len(), sat)
            };
            let room = max_held.saturating_sub(held_now) as i64;
            if room == 0 {
                tokio::select! {
                    _ = progress.notified() => {}
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                    _ = shutdown.changed() => {}
                }
                continue;
            }
            let limit = room.min(self.cfg.batch_size);
            let claim_started = std::time::Instant::now();
            let claimed =
                match queue::claim_due(&self.pool, &self.worker, limit, self.cfg.lease, &saturated)
                    .await
                {
                    Ok(rows) => rows,
                    Err(e) => {
                        tracing::warn!(error = %e, "claim failed; retrying in 1 s");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                            _ = shutdown.changed() => {}
                        }
                        continue;
                    }
                };
            let got = claimed.len() as i64;
            slow("claim", claim_started);
            {
                let mut h = held.lock().expect("held lock");
                for row in &claimed {
                    h.insert(row.id, row.endpoint_id);
                }
            }
            for row in claimed {
                let ep_sem = per_endpoint
                    .entry(row.endpoint_id)
                    .or_insert_with(|| {
                        Arc::new(Semaphore::new(self.cfg.per_endpoint_concurrency.max(1)))
                    })
                    .clone();
                let global = global.clone();
                let sender = sender.clone();
                let results = results_tx.clone();
                let metrics = self.metrics.clone();
                let stopping = shutdown.clone();
                tasks.spawn(async move {
                    // The endpoint's slot first: waiting for a slow endpoint holds no global slot.
                    let _ep = ep_sem.acquire_owned().await;
                    let _slot = global.acquire_owned().await;
                    if *stopping.borrow() {
                        return; // not sent: handed back to the queue on the way out
                    }
                    let jitter: f64 = rand::thread_rng().gen();
                    let outcome = sender.attempt(&row, jitter).await;
                    metrics.observe(&outcome);
                    let _ = results.send(outcome);
                });
            }
            if per_endpoint.len() > 10_000 {
                per_endpoint.retain(|_, s| Arc::strong_count(s) > 1);
            }
            if got < limit {
                let sleep = match queue::next_due(&self.pool).await {
                    Ok(Some(at)) => (at - chrono::Utc::now())
                        .to_std()
                        .unwrap_or_default()
                        .clamp(Duration::from_millis(5), Duration::from_secs(1)),
                    _ => Duration::from_secs(1),
                };
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = tokio::time::sleep(sleep) => {}
                    _ = shutdown.changed() => {}
                }
            }
        }

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
        }
        drop(results_tx);
        let _ = writer.await;
        listener.abort();
        renewer.abort();
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

/// Records outcomes in batches. A batch that cannot be written (database down) is kept
/// and retried: an outcome is never dropped while this process lives.
async fn write_outcomes(
    pool: PgPool,
    worker: String,
    mut rx: mpsc::UnboundedReceiver<Outcome>,
    held: Held,
    progress: Arc<Notify>,
) {
    let mut batch: Vec<Outcome> = Vec::new();
    loop {
        if batch.is_empty() {
            match rx.recv().await {
                Some(o) => batch.push(o),
                None => return,
            }
        }
        while batch.len() < 500 {
            match rx.try_recv() {
                Ok(o) => batch.push(o),
                Err(_) => break,
            }
        }
        let started = std::time::Instant::now();
        let recorded = queue::record(&pool, &worker, &batch).await;
        slow("recording outcomes", started);
        match recorded {
            Ok(_) => {
                let mut h = held.lock().expect("held lock");
                for o in &batch {
                    h.remove(&o.id);
                }
                drop(h);
                batch.clear();
                progress.notify_one();
            }
            Err(e) => {
                tracing::warn!(error = %e, pending = batch.len(), "recording outcomes failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// Keeps the leases of held rows alive while they wait or run.
async fn renew(pool: PgPool, worker: String, held: Held, lease: Duration) {
    let every = (lease / 3).max(Duration::from_millis(200));
    loop {
        tokio::time::sleep(every).await;
        let ids: Vec<i64> = held.lock().expect("held lock").keys().copied().collect();
        if ids.is_empty() {
            continue;
        }
        if let Err(e) = queue::renew_leases(&pool, &worker, &ids, lease).await {
            tracing::warn!(error = %e, "lease renewal failed");
        }
    }
}

/// Database round trips of the dispatcher normally take a few milliseconds; a slow one
/// delays every attempt behind it, so it is worth a line in the log.
fn slow(what: &str, since: std::time::Instant) {
    let took = since.elapsed();
    if took > Duration::from_millis(100) {
        tracing::warn!(took_ms = took.as_millis() as u64, "{what} was slow");
    }
}
