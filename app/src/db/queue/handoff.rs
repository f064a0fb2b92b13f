//! Attempts handed from ingest straight to the dispatcher of the same process.
//!
//! A fresh event's first attempts are inserted already leased to that dispatcher (status
//! `in_flight`, `claimed_by`, `lease_expires_at`) in the ingest transaction and passed to
//! it after the commit, so no notification, wake-up or claim sits between the commit and
//! the send. Crash safety is the claim's: if the process dies after the commit, the lease
//! runs out and any dispatcher's lease recovery queues the rows again.

use crate::core::{EndpointId, ProjectId};
use std::time::Duration;

pub use super::claim::Claimed;

/// The dispatcher is claiming, and the claim may take the room asked for.
#[derive(Debug)]
pub struct Busy(pub tokio::sync::watch::Receiver<bool>);

impl Busy {
    /// Waits until the claim has ended, at most `limit`.
    pub async fn wait(mut self, limit: Duration) {
        let _ = tokio::time::timeout(limit, self.0.wait_for(|running| !running)).await;
    }
}

/// A dispatcher that takes attempts directly from ingest in its process.
pub trait Handoff: Send + Sync {
    /// The worker name the rows are leased to, and for how long.
    fn worker(&self) -> &str;
    fn lease(&self) -> Duration;
    /// Which of these endpoints (of one project, none throttled) it has room for now;
    /// the room stays reserved until [`Handoff::deliver`] or [`Handoff::cancel`]. Busy
    /// (nothing reserved) when a claim running now may take room this would need.
    fn reserve(
        &self,
        project_id: ProjectId,
        endpoints: &[EndpointId],
    ) -> Result<Vec<EndpointId>, Busy>;
    /// The committed rows of a reservation (the project and the endpoints reserved).
    fn deliver(&self, rows: Vec<Claimed>, project_id: ProjectId, reserved: &[EndpointId]);
    /// A reservation that was not used (the transaction failed or was a repeat).
    fn cancel(&self, project_id: ProjectId, reserved: &[EndpointId]);
}

/// Gives a reservation back unless it was delivered, whatever way ingest ends.
pub(crate) struct Reserved<'a> {
    pub handoff: &'a dyn Handoff,
    pub project_id: ProjectId,
    pub endpoints: Vec<EndpointId>,
}

impl Reserved<'_> {
    pub fn deliver(mut self, rows: Vec<Claimed>) {
        let endpoints = std::mem::take(&mut self.endpoints);
        self.handoff.deliver(rows, self.project_id, &endpoints);
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if !self.endpoints.is_empty() {
            self.handoff.cancel(self.project_id, &self.endpoints);
        }
    }
}
