//! Starting an attempt's task: the shares it waits for, its start slot, and the report
//! it always leaves (an outcome, or its row handed back).

use app::core::EndpointId;
use std::{collections::HashMap, panic::AssertUnwindSafe, sync::Arc};

use app::core::throttle::{check_slot, SlotCheck};
use futures::FutureExt;
use rand::Rng;
use tokio::{
    sync::{mpsc, watch, Semaphore},
    task::JoinSet,
};
use tracing::Instrument;

use super::{
    ms_until,
    outcome_writer::{HandBackOnDrop, Report},
    panic_message,
    queue::{Claimed, Outcome},
    sender::Sender,
    Probe,
};
use crate::metrics::Metrics;

pub(super) struct Launch {
    /// The concurrency slots unthrottled attempts share.
    pub global: Arc<Semaphore>,
    pub per_endpoint: HashMap<EndpointId, Arc<Semaphore>>,
    pub per_endpoint_concurrency: usize,
    pub sender: Arc<Sender>,
    pub metrics: Arc<Metrics>,
    pub shutdown: watch::Receiver<bool>,
    pub probe: Option<Probe>,
    pub reports: mpsc::UnboundedSender<Report>,
    /// The rows held, so a task can mark its row's request ended.
    pub held: super::Held,
    pub tasks: JoinSet<()>,
}

impl Launch {
    /// Starts one task per row; each row must already be in the held map.
    pub fn all(&mut self, rows: Vec<Claimed>) {
        for row in rows {
            self.one(row);
        }
    }

    fn one(&mut self, row: Claimed) {
        let cap = self.per_endpoint_concurrency;
        let ep_sem = self
            .per_endpoint
            .entry(row.of.endpoint_id)
            .or_insert_with(|| Arc::new(Semaphore::new(cap)))
            .clone();
        let global = self.global.clone();
        let sender = self.sender.clone();
        let metrics = self.metrics.clone();
        let mut stopping = self.shutdown.clone();
        let probe = self.probe.clone();
        let hand_back = HandBackOnDrop::new(
            row.id,
            row.created_at,
            self.held.clone(),
            self.reports.clone(),
        );
        let span = crate::telemetry::attempt_span(&row);
        let task_span = span.clone();
        self.tasks.spawn(
            async move {
                // An erased event has nothing left to send: its attempt ends here, unsent.
                if row.erased {
                    let outcome = sender.erased(&row);
                    metrics.observe(&outcome);
                    crate::telemetry::record_outcome(&span, &outcome);
                    hand_back.report(outcome);
                    return;
                }
                let jitter: f64 = rand::thread_rng().gen();
                // A throttled attempt is signed before it waits, so that its start follows
                // the slot's check at once. A bug there is an outcome too, like one in the send.
                let prepared = row.start_at.map(|at| {
                    std::panic::catch_unwind(AssertUnwindSafe(|| {
                        sender.prepare(&row, at.timestamp())
                    }))
                });
                let prepared = match prepared {
                    Some(Ok(Ok(request))) => Some(request),
                    Some(Ok(Err(sealed))) => {
                        let outcome = sender.internal_failure(&row, &sealed, jitter);
                        metrics.observe(&outcome);
                        crate::telemetry::record_outcome(&span, &outcome);
                        hand_back.report(outcome);
                        return;
                    }
                    Some(Err(panic)) => {
                        let outcome = internal_failure(&sender, &row, panic, jitter);
                        metrics.observe(&outcome);
                        crate::telemetry::record_outcome(&span, &outcome);
                        hand_back.report(outcome);
                        return;
                    }
                    None => None,
                };
                // A throttled endpoint's attempt waits for its start slot holding no
                // concurrency slot; one that misses its slot goes back to the queue.
                if let Some(start_at) = row.start_at {
                    if let SlotCheck::Wait(wait) = check_slot(ms_until(start_at)) {
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = stopping.changed() => return,
                        }
                    }
                }
                // The endpoint's slot first: waiting for a slow endpoint holds no global slot.
                let _ep = ep_sem.acquire_owned().await;
                // A throttled attempt starts on the room its claim reserved: its row counts
                // against its endpoint's, its project's and this worker's shares, and its
                // start slot is booked. Waiting for the slots unthrottled attempts share, it
                // would miss its start whenever other tenants' hanging attempts held them all,
                // go back, be booked again and miss again, for as long as they hung.
                let _slot = match row.start_at {
                    None => Some(global.acquire_owned().await),
                    Some(_) => None,
                };
                if *stopping.borrow() {
                    return; // not sent: handed back to the queue by `hand_back`
                }
                if let Some(start_at) = row.start_at {
                    match check_slot(ms_until(start_at)) {
                        SlotCheck::Go => {}
                        SlotCheck::Wait(wait) => tokio::time::sleep(wait).await,
                        SlotCheck::Missed => {
                            tracing::debug!(
                                delivery = row.id.get(),
                                "start slot missed; back to the queue"
                            );
                            metrics.start_slot_missed();
                            return;
                        }
                    }
                }
                let attempt = async {
                    if let Some(probe) = &probe {
                        probe(&row);
                    }
                    match prepared {
                        Some(request) => sender.send_prepared(&row, request, jitter).await,
                        None => sender.attempt(&row, jitter).await,
                    }
                };
                // A bug in one attempt must not leave its row held (and its slot
                // taken) for ever: it is recorded as an internal failure and retried.
                let outcome = match AssertUnwindSafe(attempt).catch_unwind().await {
                    Ok(outcome) => outcome,
                    Err(panic) => internal_failure(&sender, &row, panic, jitter),
                };
                metrics.observe(&outcome);
                crate::telemetry::record_outcome(&span, &outcome);
                hand_back.report(outcome);
            }
            .instrument(task_span),
        );
    }

    /// Endpoints come and go; their semaphores need not stay once idle.
    pub fn forget_idle_endpoints(&mut self) {
        if self.per_endpoint.len() > 10_000 {
            self.per_endpoint.retain(|_, s| Arc::strong_count(s) > 1);
        }
    }
}

/// The outcome of an attempt whose preparation or send panicked.
fn internal_failure(
    sender: &Sender,
    row: &Claimed,
    panic: Box<dyn std::any::Any + Send>,
    jitter: f64,
) -> Outcome {
    let message = panic_message(panic.as_ref());
    tracing::error!(delivery = row.id.get(), %message, "attempt panicked");
    sender.internal_failure(row, &message, jitter)
}
