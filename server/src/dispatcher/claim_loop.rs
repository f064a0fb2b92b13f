//! The claim loop, one turn at a time: count the room left under the process's,
//! endpoints' and projects' shares, claim that many due rows, hold and launch them, then
//! pause until the next claim is worth its scan. What the last claims saw lives in
//! [`Pacing`], whose rules are plain functions a unit test reaches.

use app::core::{EndpointId, ProjectId};
use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use app::cfg::Config;
use tokio::sync::{mpsc, watch, Notify};
use tracing::Instrument;

use super::{handoff::LocalHandoff, launch::Launch, queue, queue::Claimed, slow, Held, HeldRow};

/// How long a claim woken by freed slots waits for more outcomes to free theirs. Short:
/// an endpoint's share comes back a batch of outcomes at a time, and the pause bounds
/// how fast one endpoint's backlog drains (16 slots per pause and claim: 25 ms let a
/// fast endpoint take ~450 attempts/s, too few to catch up after a stall at 500/s).
const REFILL_PAUSE: Duration = Duration::from_millis(5);

/// How often, at most, a claim passes over the project that filled the claims before it.
/// Each costs a walk endpoint by endpoint (one index descent per endpoint with waiting
/// rows); twenty a second bound another project's wait behind a burst to about 50 ms.
const PASS_OVER_EVERY: Duration = Duration::from_millis(50);

/// What the last claims saw, which decides the next one's caps.
#[derive(Debug)]
pub(super) struct Pacing {
    /// When a claim last left an endpoint or project at its share. For a second after,
    /// its backlog likely still fills the oldest due rows (the room promised to ingest
    /// meanwhile can make the next claim look uncapped).
    last_capped: Option<Instant>,
    /// The project every row of the last claim came from, if there was one.
    sole_project: Option<ProjectId>,
    /// While one project fills claim after claim, one claim every [`PASS_OVER_EVERY`]
    /// passes it over and takes everyone else's due rows: its burst of 150,000 attempts
    /// (3 batches to 500 endpoints) otherwise held another project's events for the 20 s
    /// it took to send, its share never full at a claim.
    pass_over_next: Option<ProjectId>,
    last_pass_over: Instant,
}

impl Pacing {
    pub fn new(now: Instant) -> Pacing {
        Pacing {
            last_capped: None,
            sole_project: None,
            pass_over_next: None,
            last_pass_over: now,
        }
    }

    pub fn backlogged(&self, now: Instant) -> bool {
        (self.last_capped).is_some_and(|at| now.duration_since(at) < Duration::from_secs(1))
    }

    /// The project this claim passes over, if it is its turn (taken once).
    pub fn pass_over(&mut self, now: Instant) -> Option<ProjectId> {
        let p = self.pass_over_next.take();
        if p.is_some() {
            self.last_pass_over = now;
        }
        p
    }

    /// Notes which project the claim's rows came from; `passing`: it passed one over.
    pub fn claimed(
        &mut self,
        mut projects: impl Iterator<Item = ProjectId>,
        passing: bool,
        now: Instant,
    ) {
        self.sole_project = projects
            .next()
            .filter(|first| projects.all(|p| p == *first));
        if !passing && now.duration_since(self.last_pass_over) >= PASS_OVER_EVERY {
            self.pass_over_next = self.sole_project;
        }
    }

    pub fn capped(&mut self, now: Instant) {
        self.last_capped = Some(now);
    }
}

/// The room a claim has, and the shares it must respect.
struct Room {
    room: i64,
    limit: i64,
    shares: Shares,
    sole_project_room: Option<i64>,
}

/// Everything one running claim loop holds.
pub(super) struct ClaimLoop {
    pub cfg: Arc<Config>,
    pub worker: String,
    pub claims: app::db::kept::Kept,
    pub held: Held,
    pub max_held: usize,
    pub handoff: Option<Arc<LocalHandoff>>,
    pub handed: mpsc::UnboundedReceiver<Vec<Claimed>>,
    pub launch: Launch,
    /// Woken by each recorded outcome batch.
    pub progress: Arc<Notify>,
    /// Outcome batches recorded so far: a claim that raced one can tell.
    pub recorded: Arc<AtomicU64>,
    /// Woken by a notification of new pending rows.
    pub wake: Arc<Notify>,
    pub pacing: Pacing,
}

impl ClaimLoop {
    /// One turn: wait for room, or claim, launch and pause.
    pub async fn turn(&mut self, shutdown: &mut watch::Receiver<bool>) {
        while self.launch.tasks.try_join_next().is_some() {}
        while let Ok(rows) = self.handed.try_recv() {
            self.launch.all(rows);
        }
        let room = self.room();
        if room.room == 0 {
            tokio::select! {
                Some(rows) = self.handed.recv() => self.launch.all(rows),
                _ = self.progress.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = shutdown.changed() => {}
            }
            return;
        }
        let recorded_before = self.recorded.load(Ordering::Acquire);
        let caps = queue::Caps {
            per_endpoint: self.cfg.per_endpoint_concurrency.max(1) as i64,
            per_project: self.cfg.project_concurrency.max(1) as i64,
            endpoints: &room.shares.endpoints,
            endpoint_held: &room.shares.endpoint_held,
            projects: &room.shares.projects,
            project_held: &room.shares.project_held,
            throttled_held: room.shares.throttled_held,
            backlogged: self.pacing.backlogged(Instant::now()),
            sole_project_room: room.sole_project_room,
            pass_over: self.pacing.pass_over(Instant::now()),
        };
        let passing = caps.pass_over.is_some();
        let Some(claimed) = self.claim(room.limit, &caps, shutdown).await else {
            return;
        };
        let got = claimed.len() as i64;
        let projects = claimed.iter().map(|r| r.of.project_id);
        self.pacing.claimed(projects, passing, Instant::now());
        // Booking a throttled endpoint's slots may have crowded others out of this
        // claim; the next claim skips that endpoint, so it comes at once.
        let booked = claimed.iter().any(|r| r.start_at.is_some());
        self.hold(&claimed);
        let capped = self.capped_now(&caps);
        if capped {
            self.pacing.capped(Instant::now());
        }
        self.launch.all(claimed);
        self.launch.forget_idle_endpoints();
        // An outcome recorded while this claim ran freed a slot it could not see.
        let raced = self.recorded.load(Ordering::Acquire) != recorded_before;
        // A claim that passed a project over found what others had; the project's own
        // rows come with the next claim, at once.
        if got < room.limit && !booked && !passing {
            self.pause(raced, capped, shutdown).await;
        }
    }

    /// The room under the process's share, with every endpoint's and project's held rows
    /// and the room promised to ingest.
    fn room(&self) -> Room {
        let h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let handoff = self.handoff.as_ref();
        let promised = handoff.map(|p| p.promised()).unwrap_or_default();
        let reserved = handoff.map_or(0, |h| h.reserved());
        let room = self.max_held.saturating_sub(h.len() + reserved) as i64;
        let shares = Shares::of(h.values(), promised);
        let sole_project_room = self.pacing.sole_project.map(|p| {
            let held = (shares.projects.iter())
                .position(|q| *q == p)
                .map_or(0, |i| shares.project_held[i]);
            self.cfg.project_concurrency.max(1) as i64 - held
        });
        let limit = room.min(self.cfg.batch_size);
        // Counted and marked under one lock: a reservation made while the claim runs
        // leaves the claim its room (see `LocalHandoff::reserve`).
        if let (Some(handoff), true) = (handoff, room > 0) {
            handoff.begin_claim(
                limit.max(0) as usize,
                &shares.endpoints,
                &shares.endpoint_held,
                &shares.projects,
                &shares.project_held,
            );
        }
        Room {
            room,
            limit,
            shares,
            sole_project_room,
        }
    }

    /// Claims due rows; None (after a pause) when the claim failed.
    async fn claim(
        &self,
        limit: i64,
        caps: &queue::Caps<'_>,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Option<Vec<Claimed>> {
        let started = Instant::now();
        let span = crate::telemetry::claim_span();
        let claimed = claim(&self.claims, &self.worker, limit, self.cfg.lease, caps)
            .instrument(span.clone())
            .await;
        slow("claim", started);
        match claimed {
            Ok(rows) => {
                span.record("posthorn.claimed", rows.len());
                self.launch.metrics.claimed(started.elapsed(), rows.len());
                Some(rows)
            }
            Err(e) => {
                if let Some(handoff) = &self.handoff {
                    let _h = self.held.lock().unwrap_or_else(|e| e.into_inner());
                    handoff.end_claim();
                }
                tracing::warn!(error = %e, "claim failed; retrying in 1 s");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = shutdown.changed() => {}
                }
                None
            }
        }
    }

    /// Holds the claimed rows and ends the claim for the hand-off, under one lock.
    fn hold(&self, claimed: &[Claimed]) {
        let mut h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for row in claimed {
            let held = HeldRow::new(
                row.of.endpoint_id,
                row.of.project_id,
                row.start_at.is_some(),
            );
            h.insert(row.id, held);
        }
        if let Some(handoff) = &self.handoff {
            handoff.end_claim();
        }
    }

    /// Whether rows this claim passed over wait for an endpoint or project at its share:
    /// they become claimable as soon as an outcome frees a slot.
    fn capped_now(&self, caps: &queue::Caps<'_>) -> bool {
        let h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let now = Shares::of(h.values(), Default::default());
        queue::Caps {
            endpoints: &now.endpoints,
            endpoint_held: &now.endpoint_held,
            projects: &now.projects,
            project_held: &now.project_held,
            ..*caps
        }
        .blocked_somewhere()
    }

    /// After a claim that found less than it could take: waits until the next row is due
    /// (at most 1 s), launching attempts handed over from ingest meanwhile.
    async fn pause(&mut self, raced: bool, capped: bool, shutdown: &mut watch::Receiver<bool>) {
        // Claims woken by freed slots are spaced out by a few ms, so a backlog answering
        // one outcome at a time gets a claim per handful of outcomes, not one per outcome
        // (each claim costs the database a scan).
        let sleep = if raced {
            REFILL_PAUSE
        } else {
            match next_due(&self.claims).await {
                Ok(Some(at)) => (at - chrono::Utc::now())
                    .to_std()
                    .unwrap_or_default()
                    .clamp(Duration::from_millis(5), Duration::from_secs(1)),
                _ => Duration::from_secs(1),
            }
        };
        // Attempts handed over from ingest are launched as they come without a claim:
        // they leave nothing new in the queue, and a claim (with its `next_due`) per
        // handed event was two statements of every event's cost. A freed slot brings the
        // claim forward to a few ms from now, and a new attempt (a wake-up) to now: the
        // pause that lets outcomes gather never holds back another tenant's fresh event.
        let mut until = tokio::time::Instant::now() + sleep;
        let mut refill = false;
        loop {
            tokio::select! {
                Some(rows) = self.handed.recv() => {
                    self.launch.all(rows);
                    while self.launch.tasks.try_join_next().is_some() {}
                    continue;
                }
                _ = self.progress.notified(), if capped && !refill => {
                    refill = true;
                    until = until.min(tokio::time::Instant::now() + REFILL_PAUSE);
                    continue;
                }
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep_until(until) => {}
                _ = shutdown.changed() => {}
            }
            break;
        }
    }
}

/// How many held rows each endpoint and project has, as the claim's arguments.
#[derive(Default)]
pub(super) struct Shares {
    endpoints: Vec<EndpointId>,
    endpoint_held: Vec<i64>,
    projects: Vec<ProjectId>,
    project_held: Vec<i64>,
    throttled_held: bool,
}

impl Shares {
    /// Held rows plus the room promised to ingest (by endpoint, by project).
    fn of<'a>(
        rows: impl Iterator<Item = &'a HeldRow>,
        promised: (
            std::collections::HashMap<EndpointId, i64>,
            std::collections::HashMap<ProjectId, i64>,
        ),
    ) -> Shares {
        let (mut per_endpoint, mut per_project) = promised;
        let mut throttled_held = false;
        for r in rows {
            throttled_held |= r.throttled;
            *per_endpoint.entry(r.endpoint_id).or_default() += 1;
            *per_project.entry(r.project_id).or_default() += 1;
        }
        let (endpoints, endpoint_held) = per_endpoint.into_iter().unzip();
        let (projects, project_held) = per_project.into_iter().unzip();
        Shares {
            endpoints,
            endpoint_held,
            projects,
            project_held,
            throttled_held,
        }
    }
}

/// [`queue::claim_due`] on the claim's kept connection.
async fn claim(
    claims: &app::db::kept::Kept,
    worker: &str,
    limit: i64,
    lease: Duration,
    caps: &queue::Caps<'_>,
) -> Result<Vec<Claimed>, sqlx::Error> {
    let mut conn = claims.get().await?;
    let claimed = queue::claim_due(&mut *conn, worker, limit, lease, caps).await;
    conn.keep_if_ok(claimed)
}

/// [`queue::next_due`] on the claim's kept connection.
async fn next_due(
    claims: &app::db::kept::Kept,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, sqlx::Error> {
    let mut conn = claims.get().await?;
    let next = queue::next_due(&mut *conn).await;
    conn.keep_if_ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_filling_claims_is_passed_over_once_per_interval() {
        let t0 = Instant::now();
        let mut p = Pacing::new(t0);
        // One project fills a claim before the interval is over: not yet.
        p.claimed(
            [7, 7].into_iter().map(ProjectId::new),
            false,
            t0 + Duration::from_millis(10),
        );
        assert_eq!(p.sole_project, Some(ProjectId::new(7)));
        assert_eq!(p.pass_over(t0 + Duration::from_millis(10)), None);
        // Past it: the next claim passes project 7 over, once.
        let t1 = t0 + PASS_OVER_EVERY;
        p.claimed([7].into_iter().map(ProjectId::new), false, t1);
        assert_eq!(p.pass_over(t1), Some(ProjectId::new(7)));
        assert_eq!(p.pass_over(t1), None);
        // A claim that passed over sets no new turn, and a mixed claim has no sole project.
        p.claimed(
            [7, 8].into_iter().map(ProjectId::new),
            true,
            t1 + PASS_OVER_EVERY,
        );
        assert_eq!((p.sole_project, p.pass_over(t1)), (None, None));
        p.claimed(std::iter::empty(), false, t1 + PASS_OVER_EVERY * 2);
        assert_eq!(p.sole_project, None);
    }

    #[test]
    fn a_claim_left_capped_counts_as_backlogged_for_a_second() {
        let t0 = Instant::now();
        let mut p = Pacing::new(t0);
        assert!(!p.backlogged(t0));
        p.capped(t0);
        assert!(p.backlogged(t0 + Duration::from_millis(999)));
        assert!(!p.backlogged(t0 + Duration::from_secs(1)));
    }
}
