//! Where schema work runs: compiling a schema (when set, or read on a cache miss) and
//! checking events against it. Bounded as it is (see `app::core::schema`), it is still
//! CPU that must not run on the async workers serving every tenant's requests: it goes to
//! the blocking pool, at most [`AT_ONCE`] jobs in the process and one per project, so one
//! tenant's costly checks hold one slot at most and never stall another's requests. A
//! request waits at most [`WAIT`] for its turn, then is answered `503` (retry later). The
//! slots go with the job, not the request: a caller that hangs up frees nothing early.

use crate::core::ProjectId;
use std::{
    collections::HashMap,
    sync::{Arc, LazyLock, Mutex},
    time::Duration,
};

use tokio::sync::{Mutex as Turn, Semaphore};

use crate::error::AppError;

pub const AT_ONCE: usize = 4;
pub const WAIT: Duration = Duration::from_millis(1500);

struct Gate {
    slots: Arc<Semaphore>,
    /// A turn per project with work waiting or running.
    turns: Mutex<HashMap<ProjectId, Arc<Turn<()>>>>,
}

static GATE: LazyLock<Gate> = LazyLock::new(|| Gate {
    slots: Arc::new(Semaphore::new(AT_ONCE)),
    turns: Mutex::new(HashMap::new()),
});

fn busy() -> AppError {
    AppError::Busy("schema checks of this project are busy: retry shortly".into())
}

/// Runs `job` on the blocking pool in the project's turn.
pub async fn run<T: Send + 'static>(
    project: ProjectId,
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AppError> {
    let turn = GATE
        .turns
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(project)
        .or_default()
        .clone();
    let waited = async {
        let mine = turn.clone().lock_owned().await;
        let slot = GATE.slots.clone().acquire_owned().await.ok()?;
        Some((mine, slot))
    };
    let held = tokio::time::timeout(WAIT, waited).await.ok().flatten();
    drop(turn);
    let Some((mine, slot)) = held else {
        forget_idle(project);
        return Err(busy());
    };
    let done = tokio::task::spawn_blocking(move || {
        let out = job();
        drop((mine, slot));
        forget_idle(project);
        out
    })
    .await;
    done.map_err(|_| AppError::Internal("the schema check failed"))
}

/// Drops the project's turn once nobody holds or waits for it.
fn forget_idle(project: ProjectId) {
    let mut turns = GATE.turns.lock().unwrap_or_else(|p| p.into_inner());
    if turns
        .get(&project)
        .is_some_and(|t| Arc::strong_count(t) == 1)
    {
        turns.remove(&project);
    }
}
