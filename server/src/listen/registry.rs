//! The sessions this server holds: one connection per session (a new one ends the one
//! before it), and at most [`MAX_CONNECTIONS_PER_PROJECT`] per project, so a tenant that
//! opens, connects and deletes in a loop holds a bounded number of sockets and claim
//! loops here. Both are given back on drop, however the connection's task ends.

use app::core::{EndpointId, ProjectId};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, OnceLock},
};

use rand::Rng;
use tokio::sync::Notify;

/// Listen connections one project may hold on one server (twice its sessions: room for
/// a CLI reconnecting before its old connection is noticed gone).
pub const MAX_CONNECTIONS_PER_PROJECT: usize = 10;

#[derive(Default)]
struct Held {
    /// Each attached session: its connection's generation, and how to end it.
    sessions: HashMap<EndpointId, (u64, Arc<Notify>)>,
    per_project: HashMap<ProjectId, usize>,
}

fn held() -> MutexGuard<'static, Held> {
    static HELD: OnceLock<Mutex<Held>> = OnceLock::new();
    HELD.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// One of a project's connection slots.
pub struct Slot {
    project_id: ProjectId,
}

impl Slot {
    /// A slot, unless the project holds all of its own on this server.
    pub fn take(project_id: ProjectId) -> Option<Slot> {
        let mut held = held();
        let n = held.per_project.entry(project_id).or_default();
        if *n >= MAX_CONNECTIONS_PER_PROJECT {
            return None;
        }
        *n += 1;
        Some(Slot { project_id })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = held();
        if let Some(n) = held.per_project.get_mut(&self.project_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.per_project.remove(&self.project_id);
            }
        }
    }
}

/// A connection holding its session on this server.
pub struct Attachment {
    endpoint_id: EndpointId,
    generation: u64,
    /// Notified when a newer connection takes the session over.
    pub ended: Arc<Notify>,
}

impl Attachment {
    /// Takes the session over: the connection before it on this server is told to end.
    pub fn attach(endpoint_id: EndpointId) -> Attachment {
        let generation: u64 = rand::thread_rng().gen();
        let ended = Arc::new(Notify::new());
        let before = held()
            .sessions
            .insert(endpoint_id, (generation, ended.clone()));
        if let Some((_, before)) = before {
            before.notify_one();
        }
        Attachment {
            endpoint_id,
            generation,
            ended,
        }
    }

    /// No newer connection has taken the session over on this server.
    pub fn is_current(&self) -> bool {
        held()
            .sessions
            .get(&self.endpoint_id)
            .is_some_and(|(g, _)| *g == self.generation)
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let mut held = held();
        if held
            .sessions
            .get(&self.endpoint_id)
            .is_some_and(|(g, _)| *g == self.generation)
        {
            held.sessions.remove(&self.endpoint_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projects_slots_are_bounded_and_come_back_when_dropped() {
        let project = -7; // no real project's id
        let slots: Vec<Slot> = (0..MAX_CONNECTIONS_PER_PROJECT)
            .map(|_| Slot::take(ProjectId::new(project)).unwrap())
            .collect();
        assert!(Slot::take(ProjectId::new(project)).is_none());
        assert!(
            Slot::take(ProjectId::new(-8)).is_some(),
            "another project keeps its own"
        );
        drop(slots);
        assert!(Slot::take(ProjectId::new(project)).is_some());
    }

    #[test]
    fn a_new_connection_ends_the_one_before_it() {
        let first = Attachment::attach(EndpointId::new(-9));
        let second = Attachment::attach(EndpointId::new(-9));
        assert!(!first.is_current() && second.is_current());
        // The first was told; its ending does not detach the second.
        drop(first);
        assert!(second.is_current());
    }
}
