//! Tests that measure a rate, a latency or a process's memory, or take PostgreSQL down:
//! those marked `solo()` run with no sibling test at all, the rest beside each other as
//! before but never beside a solo one. The harness is the one under `tests/it`.

#[path = "../it/common/mod.rs"]
mod common;

mod crash;
mod hostile;
mod hostile_brokers;
mod inspector_memory;
mod ordering_processes;
mod pg_restart;
mod throttle_fairness;
mod throttle_timing;

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

// Tokio's lock: each test has a runtime of its own, and a guard is held across awaits.
static SOLO: RwLock<()> = RwLock::const_new(());

/// Held for the whole of a test that measures: no other test of this binary runs meanwhile.
pub async fn solo() -> RwLockWriteGuard<'static, ()> {
    SOLO.write().await
}

/// Held by the others: they may run beside each other, not beside a solo test.
pub async fn shared() -> RwLockReadGuard<'static, ()> {
    SOLO.read().await
}
