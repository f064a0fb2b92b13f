//! The dispatcher's side of [`app::db::queue::handoff`]: room for attempts straight from ingest
//! in this process, counted against the same shares as claimed rows.

use app::core::{AttemptId, EndpointId, ProjectId};
use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use app::db::queue::handoff::{Busy, Claimed, Handoff};
use tokio::sync::{mpsc, watch};

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
    /// The claim running now, if any: it counted the shares before its query ran, so
    /// room reserved meanwhile must leave what the claim may still take. Locked after
    /// `held`.
    claim: Mutex<Option<ClaimWindow>>,
    /// True while a claim runs; ingest that found its room spoken for waits on it.
    claiming: watch::Sender<bool>,
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
            claim: Mutex::new(None),
            claiming: watch::Sender::new(false),
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
    pub(crate) fn promised(&self) -> (HashMap<EndpointId, i64>, HashMap<ProjectId, i64>) {
        let promised = self.promised.lock().unwrap_or_else(|e| e.into_inner());
        fn count<K: Copy + Eq + std::hash::Hash>(m: &HashMap<K, usize>) -> HashMap<K, i64> {
            m.iter().map(|(k, v)| (*k, *v as i64)).collect()
        }
        (count(&promised.endpoints), count(&promised.projects))
    }

    /// A claim of up to `limit` rows starts with these shares counted (held rows and
    /// promised room, by endpoint and by project); `held` is locked by the caller.
    pub(crate) fn begin_claim(
        &self,
        limit: usize,
        endpoints: &[EndpointId],
        endpoint_held: &[i64],
        projects: &[ProjectId],
        project_held: &[i64],
    ) {
        let window = ClaimWindow {
            limit,
            endpoints: endpoints
                .iter()
                .copied()
                .zip(endpoint_held.iter().copied())
                .collect(),
            projects: projects
                .iter()
                .copied()
                .zip(project_held.iter().copied())
                .collect(),
        };
        *self.claim.lock().unwrap_or_else(|e| e.into_inner()) = Some(window);
        self.claiming.send_replace(true);
    }

    /// The claim's rows are held now (or it failed); `held` is locked by the caller.
    pub(crate) fn end_claim(&self) {
        *self.claim.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.claiming.send_replace(false);
    }

    /// Which of `endpoints` (of one project) have room beside the rows held, the room
    /// promised, and what a running claim may still take.
    fn fit(
        &self,
        held: &HashMap<AttemptId, HeldRow>,
        promised: &Promised,
        claim: Option<&ClaimWindow>,
        project_id: ProjectId,
        endpoints: &[EndpointId],
    ) -> Vec<EndpointId> {
        let reserved: usize = promised.projects.values().sum();
        // A running claim may yet take up to its limit, and up to the room it saw for
        // this project and its endpoints: that room is spoken for.
        let (claim_total, (mut project_held, mut endpoint_held)) = match claim {
            Some(w) => (
                w.limit,
                w.may_take(self.per_project, self.per_endpoint, project_id, endpoints),
            ),
            None => (0, (0, vec![0usize; endpoints.len()])),
        };
        let free = self
            .max_held
            .saturating_sub(held.len() + reserved + claim_total);
        for row in held.values().filter(|r| r.in_flight()) {
            if row.project_id == project_id {
                project_held += 1;
                if let Some(i) = endpoints.iter().position(|e| *e == row.endpoint_id) {
                    endpoint_held[i] += 1;
                }
            }
        }
        project_held += promised.projects.get(&project_id).copied().unwrap_or(0);
        // Room promised to requests still storing their events may take an endpoint up
        // to twice its share, while what it holds is under its share: a burst of
        // concurrent requests to one fast endpoint then all go straight to the
        // dispatcher, the rows past the share waiting a moment for its slots
        // (`Launch`'s semaphore keeps its requests within the share), instead of the
        // long way through the queue and a claim. An endpoint that is slow or hangs
        // holds its share and gets no more.
        let fits = |(held, e): (&usize, &EndpointId)| {
            let promised = promised.endpoints.get(e).copied().unwrap_or(0);
            *held < self.per_endpoint && held + promised < 2 * self.per_endpoint
        };
        let room = free.min(self.per_project.saturating_sub(project_held));
        endpoint_held
            .iter()
            .zip(endpoints)
            .filter(|pair| fits(*pair))
            .map(|(_, e)| *e)
            .take(room)
            .collect()
    }

    /// Gives back the promises of one reservation; `held` is locked by the caller.
    fn release(&self, project_id: ProjectId, endpoints: &[EndpointId]) {
        let mut promised = self.promised.lock().unwrap_or_else(|e| e.into_inner());
        promised.take_back(project_id, endpoints);
    }
}

/// What a running claim may still take, as it counted when it started.
struct ClaimWindow {
    limit: usize,
    endpoints: HashMap<EndpointId, i64>,
    projects: HashMap<ProjectId, i64>,
}

impl ClaimWindow {
    /// The most the claim can take of one project, and of each of these endpoints.
    fn may_take(
        &self,
        per_project: usize,
        per_endpoint: usize,
        project_id: ProjectId,
        endpoints: &[EndpointId],
    ) -> (usize, Vec<usize>) {
        let room = |cap: usize, held: Option<&i64>| {
            cap.saturating_sub(held.copied().unwrap_or(0).max(0) as usize)
        };
        let project = self
            .limit
            .min(room(per_project, self.projects.get(&project_id)));
        let endpoints = endpoints
            .iter()
            .map(|e| project.min(room(per_endpoint, self.endpoints.get(e))))
            .collect();
        (project, endpoints)
    }
}

#[derive(Default)]
struct Promised {
    endpoints: HashMap<EndpointId, usize>,
    projects: HashMap<ProjectId, usize>,
}

impl Promised {
    fn take_back(&mut self, project_id: ProjectId, endpoints: &[EndpointId]) {
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

    fn reserve(
        &self,
        project_id: ProjectId,
        endpoints: &[EndpointId],
    ) -> Result<Vec<EndpointId>, Busy> {
        if !self.open.load(Ordering::Acquire) {
            return Ok(Vec::new());
        }
        // Under the held lock, so two reservations never both take the last room.
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let mut promised = self.promised.lock().unwrap_or_else(|e| e.into_inner());
        let claim = self.claim.lock().unwrap_or_else(|e| e.into_inner());
        let taken = self.fit(&held, &promised, claim.as_ref(), project_id, endpoints);
        // Room a running claim may still take is not promised twice; rather than send
        // the event the long way (a wake-up and the next claim), its ingest waits for
        // the claim to end and asks again.
        if claim.is_some()
            && taken.len()
                < self
                    .fit(&held, &promised, None, project_id, endpoints)
                    .len()
        {
            return Err(Busy(self.claiming.subscribe()));
        }
        drop(claim);
        for e in &taken {
            *promised.endpoints.entry(*e).or_default() += 1;
        }
        if !taken.is_empty() {
            *promised.projects.entry(project_id).or_default() += taken.len();
        }
        Ok(taken)
    }

    fn deliver(&self, rows: Vec<Claimed>, project_id: ProjectId, reserved: &[EndpointId]) {
        {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            for row in &rows {
                held.insert(
                    row.id,
                    HeldRow::new(row.of.endpoint_id, row.of.project_id, false),
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

    fn cancel(&self, project_id: ProjectId, reserved: &[EndpointId]) {
        let _held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        self.release(project_id, reserved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(ids: &[i64]) -> Vec<EndpointId> {
        ids.iter().copied().map(EndpointId::new).collect()
    }

    fn handoff_holding(project_rows: usize) -> Arc<LocalHandoff> {
        let held = Held::default();
        {
            let mut h = held.lock().unwrap();
            for id in 0..project_rows as i64 {
                let row = HeldRow::new(EndpointId::new(100 + id % 3), ProjectId::new(1), false);
                h.insert(AttemptId::new(id), row);
            }
        }
        let (handoff, _rx) = LocalHandoff::new("w".into(), Duration::from_secs(5), held, 64, 4, 8);
        handoff.open.store(true, Ordering::Release);
        handoff
    }

    #[tokio::test]
    async fn a_reservation_leaves_a_running_claim_the_room_it_counted() {
        // The project holds 6 of its 8; a claim has counted that and may take 2 more.
        let handoff = handoff_holding(6);
        {
            let _held = handoff.held.lock().unwrap();
            handoff.begin_claim(
                32,
                &e(&[100, 101, 102]),
                &[2, 2, 2],
                &[ProjectId::new(1)],
                &[6],
            );
        }
        assert!(handoff.reserve(ProjectId::new(1), &e(&[103, 104])).is_err());
        // The claim may take up to 8 of another project too: it waits as well.
        let busy = handoff.reserve(ProjectId::new(2), &e(&[200])).unwrap_err();
        {
            let _held = handoff.held.lock().unwrap();
            handoff.end_claim();
        }
        // The waiting ingest is let go as soon as the claim ends.
        tokio::time::timeout(Duration::from_secs(1), busy.wait(Duration::from_secs(5)))
            .await
            .expect("the wait ends with the claim");
        assert_eq!(
            handoff.reserve(ProjectId::new(1), &e(&[103, 104])).unwrap(),
            e(&[103, 104])
        );
        assert_eq!(
            handoff.reserve(ProjectId::new(2), &e(&[200])).unwrap(),
            e(&[200])
        );
    }

    #[test]
    fn a_claim_with_a_small_limit_leaves_the_rest() {
        let handoff = handoff_holding(2);
        {
            let _held = handoff.held.lock().unwrap();
            handoff.begin_claim(3, &e(&[100, 101]), &[1, 1], &[ProjectId::new(1)], &[2]);
        }
        // 2 held + at most 3 for the claim: 3 of the project's 8 remain, and a
        // reservation that fits beside the claim need not wait.
        assert!(handoff
            .reserve(ProjectId::new(1), &e(&[103, 104, 105, 106]))
            .is_err());
        assert_eq!(
            handoff
                .reserve(ProjectId::new(1), &e(&[103, 104, 105]))
                .unwrap(),
            e(&[103, 104, 105])
        );
    }

    /// A hand-off whose endpoint 100 holds `rows` rows of project 1: shares of 4 per
    /// endpoint and `per_project` per project.
    fn endpoint_holding(rows: i64, per_project: usize) -> Arc<LocalHandoff> {
        let held = Held::default();
        for id in 0..rows {
            let row = HeldRow::new(EndpointId::new(100), ProjectId::new(1), false);
            held.lock().unwrap().insert(AttemptId::new(id), row);
        }
        let (handoff, _rx) =
            LocalHandoff::new("w".into(), Duration::from_secs(5), held, 64, 4, per_project);
        handoff.open.store(true, Ordering::Release);
        handoff
    }

    #[test]
    fn promised_room_takes_an_endpoint_to_twice_its_share_only_while_it_holds_less() {
        let handoff = endpoint_holding(3, 16);
        // Concurrent requests each get room until held and promised reach 8 (2 × 4)...
        let granted = (0..6)
            .filter(|_| {
                !handoff
                    .reserve(ProjectId::new(1), &e(&[100]))
                    .unwrap()
                    .is_empty()
            })
            .count();
        assert_eq!(granted, 5);
        // ...while another endpoint of the project still has its own room.
        assert_eq!(
            handoff.reserve(ProjectId::new(1), &e(&[101])).unwrap(),
            e(&[101])
        );
        // An endpoint that holds its whole share gets nothing, promised or not.
        let handoff = endpoint_holding(4, 16);
        assert!(handoff
            .reserve(ProjectId::new(1), &e(&[100]))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_finished_request_frees_its_endpoints_share_for_the_hand_off() {
        let handoff = endpoint_holding(4, 16);
        assert!(handoff
            .reserve(ProjectId::new(1), &e(&[100]))
            .unwrap()
            .is_empty());
        // One of its requests ends; its outcome waits for the writer.
        (handoff
            .held
            .lock()
            .unwrap()
            .get_mut(&AttemptId::new(3))
            .unwrap())
        .finished = true;
        assert_eq!(
            handoff.reserve(ProjectId::new(1), &e(&[100])).unwrap(),
            e(&[100])
        );
        // It still takes room in the process (4 held and 1 promised of 64) until written.
        assert_eq!(handoff.held.lock().unwrap().len() + handoff.reserved(), 5);
    }
}
