//! The queue (`delivery_queue`) and an attempt's life in it, in one place: every
//! statement that reads or writes the queue, and the attempt's shapes.
//!
//! - [`enqueue`]: a [`NewAttempt`] is queued `pending` by ingest's fan-out, a manual
//!   Retry or Redirect, a replay, or an outcome's follow-up; in an ordering key's
//!   [`lanes`] it waits its turn.
//! - [`claim`]: a dispatcher claims due rows under a lease, as [`Claimed`] rows with
//!   everything needed to send them (or takes them straight from ingest through the
//!   [`handoff`]); leases are renewed, expired ones recovered, a stopping worker's rows
//!   released.
//! - [`outcomes`]: each finished attempt's [`Outcome`] moves its row into
//!   `delivery_log`, with the endpoint's health and the follow-up [`NextAttempt`]
//!   ([`Claimed::follow_up`]), in batches of one transaction.

pub mod claim;
pub mod enqueue;
pub mod handoff;
pub mod lanes;
pub mod listen;
pub mod outcomes;

pub use claim::{
    claim_due, claim_pool, next_due, queue_stats, recover_expired, release, release_all,
    renew_leases, Caps, Claimed,
};
pub use enqueue::NewAttempt;
pub use outcomes::{record, NextAttempt, Outcome};
