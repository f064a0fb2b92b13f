//! Attempts handed from ingest straight to the dispatcher of the same process.
//!
//! A fresh event's first attempts are inserted already leased to that dispatcher (status
//! `in_flight`, `claimed_by`, `lease_expires_at`) in the ingest transaction and passed to
//! it after the commit, so no notification, wake-up or claim sits between the commit and
//! the send. Crash safety is the claim's: if the process dies after the commit, the lease
//! runs out and any dispatcher's lease recovery queues the rows again.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// An attempt leased to one dispatcher, with everything needed to send it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Claimed {
    pub id: i64,
    pub created_at: DateTime<Utc>,
    pub project_id: i64,
    pub event_id: String,
    pub event_type: String,
    pub endpoint_id: i64,
    pub target_url: String,
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
}

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
    fn reserve(&self, project_id: i64, endpoints: &[i64]) -> Result<Vec<i64>, Busy>;
    /// The committed rows of a reservation (the project and the endpoints reserved).
    fn deliver(&self, rows: Vec<Claimed>, project_id: i64, reserved: &[i64]);
    /// A reservation that was not used (the transaction failed or was a repeat).
    fn cancel(&self, project_id: i64, reserved: &[i64]);
}

/// Gives a reservation back unless it was delivered, whatever way ingest ends.
pub(crate) struct Reserved<'a> {
    pub handoff: &'a dyn Handoff,
    pub project_id: i64,
    pub endpoints: Vec<i64>,
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
