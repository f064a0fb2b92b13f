//! Tests that measure a rate, a latency or a process's memory, or take PostgreSQL down:
//! those marked `solo()` run with no sibling test at all, the rest beside each other as
//! before but never beside a solo one. The harness is the one under `tests/it`.

#[path = "../it/common/mod.rs"]
mod common;

mod crash;
mod hostile;
mod inspector_memory;
mod ordering_processes;
mod pg_restart;
mod throttle_fairness;
mod throttle_timing;

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static SOLO: RwLock<()> = RwLock::new(());

/// Held for the whole of a test that measures: no other test of this binary runs meanwhile.
pub fn solo() -> RwLockWriteGuard<'static, ()> {
    SOLO.write().unwrap_or_else(|e| e.into_inner())
}

/// Held by the others: they may run beside each other, not beside a solo test.
pub fn shared() -> RwLockReadGuard<'static, ()> {
    SOLO.read().unwrap_or_else(|e| e.into_inner())
}
