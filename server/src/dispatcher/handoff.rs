//! The dispatcher's side of [`app::db::handoff`]: room for attempts straight from ingest
//! in this process, counted against the same shares as claimed rows.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use app::db::handoff::{Claimed, Handoff};
use tokio::sync::mpsc;

use super::{Held, HeldRow};

pub(crate) struct LocalHandoff {
    pub(crate) worker: String,
    pub(crate) lease: Duration,
    pub(crate) held: Held,
    /// Room promised to ingest transactions not yet committed, by endpoint and by
    /// project: it counts against the shares like held rows, or concurrent requests to
    /// one endpoint would each see it below its share and together take a project past
    /// its own. Locked after `held`.
    promised: Mutex<Promised>,
    pub(crate) max_held: usize,
    pub(crate) per_endpoint: usize,
    pub(crate) per_project: usize,
    /// Off once the dispatcher stops taking work.
    pub(crate) open: AtomicBool,
    pub(crate) rows: mpsc::UnboundedSender<Vec<Claimed>>,
}

impl LocalHandoff {
    pub(crate) fn new(
        worker: String,
        lease: Duration,
        held: Held,
        max_held: usize,
        per_endpoint: usize,
        per_project: usize,
    ) -> (Arc<LocalHandoff>, mpsc::UnboundedReceiver<Vec<Claimed>>) {
        let (rows, rx) = mpsc::unbounded_channel();
        let handoff = LocalHandoff {
            worker,
            lease,
            held,
            promised: Mutex::new(Promised::default()),
            max_held,
            per_endpoint,
            per_project,
            open: AtomicBool::new(false),
            rows,
        };
        (Arc::new(handoff), rx)
    }

    /// Room promised in all (each endpoint promised counts once for its project).
    pub(crate) fn reserved(&self) -> usize {
        let promised = self.promised.lock().unwrap_or_else(|e| e.into_inner());
        promised.projects.values().sum()
    }

    /// Room promised and not yet delivered, by endpoint and by project; `held` is locked
    /// by the caller.
    pub(crate) fn promised(&self) -> (HashMap<i64, i64>, HashMap<i64, i64>) {
        let promised = self.promised.lock().unwrap_or_else(|e| e.into_inner());
        let count = |m: &HashMap<i64, usize>| m.iter().map(|(k, v)| (*k, *v as i64)).collect();
        (count(&promised.endpoints), count(&promised.projects))
    }

    /// Gives back the promises of one reservation; `held` is locked by the caller.
    fn release(&self, project_id: i64, endpoints: &[i64]) {
        let mut promised = self.promised.lock().unwrap_or_else(|e| e.into_inner());
        promised.take_back(project_id, endpoints);
    }
}

#[derive(Default)]
struct Promised {
    endpoints: HashMap<i64, usize>,
    projects: HashMap<i64, usize>,
}

impl Promised {
    fn take_back(&mut self, project_id: i64, endpoints: &[i64]) {
        for e in endpoints {
            if let Some(n) = self.endpoints.get_mut(e) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.endpoints.remove(e);
                }
            }
        }
        if let Some(n) = self.projects.get_mut(&project_id) {
            *n = n.saturating_sub(endpoints.len());
            if *n == 0 {
                self.projects.remove(&project_id);
            }
        }
    }
}

impl Handoff for LocalHandoff {
    fn worker(&self) -> &str {
        &self.worker
    }

    fn lease(&self) -> Duration {
        self.lease
    }

    fn reserve(&self, project_id: i64, endpoints: &[i64]) -> Vec<i64> {
        if !self.open.load(Ordering::Acquire) {
            return Vec::new();
        }
        // Under the held lock, so two reservations never both take the last room.
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mut promised = self.promised.lock().unwrap_or_else(|e| e.into_inner());
        let reserved: usize = promised.projects.values().sum();
        let free = self.max_held.saturating_sub(held.len() + reserved);
        let mut project_held = 0;
        let mut endpoint_held = vec![0usize; endpoints.len()];
        for row in held.values() {
            if row.project_id == project_id {
                project_held += 1;
                if let Some(i) = endpoints.iter().position(|e| *e == row.endpoint_id) {
                    endpoint_held[i] += 1;
                }
            }
        }
        project_held += promised.projects.get(&project_id).copied().unwrap_or(0);
        for (i, e) in endpoints.iter().enumerate() {
            endpoint_held[i] += promised.endpoints.get(e).copied().unwrap_or(0);
        }
        let room = free.min(self.per_project.saturating_sub(project_held));
        let taken: Vec<i64> = endpoints
            .iter()
            .zip(&endpoint_held)
            .filter(|(_, n)| **n < self.per_endpoint)
            .map(|(e, _)| *e)
            .take(room)
            .collect();
        for e in &taken {
            *promised.endpoints.entry(*e).or_default() += 1;
        }
        if !taken.is_empty() {
            *promised.projects.entry(project_id).or_default() += taken.len();
        }
        taken
    }

    fn deliver(&self, rows: Vec<Claimed>, project_id: i64, reserved: &[i64]) {
        {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            for row in &rows {
                held.insert(
                    row.id,
                    HeldRow {
                        endpoint_id: row.endpoint_id,
                        project_id: row.project_id,
                        throttled: false,
                    },
                );
            }
            self.release(project_id, reserved);
        }
        if let Err(mpsc::error::SendError(rows)) = self.rows.send(rows) {
            // The dispatcher has stopped: the rows' leases run out and any dispatcher
            // queues them again.
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            for row in &rows {
                held.remove(&row.id);
            }
            tracing::warn!(
                rows = rows.len(),
                "dispatcher stopped; handed-off attempts wait for their lease"
            );
        }
    }

    fn cancel(&self, project_id: i64, reserved: &[i64]) {
        let _held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        self.release(project_id, reserved);
    }
}
