//! Erasure by data subject and by event (SPEC "Data lifecycle"), audited: who asked,
//! for what. The work itself is [`crate::db::erasures`].

use crate::core::EventId;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use crate::{
    auth::Access,
    core::{limits::Limit, permissions::Action},
    db::{audit, erasures, limits},
    error::AppResult,
};

pub use erasures::Erasure;

/// Starts erasing `subject`'s events (those accepted until now); any server process
/// runs it in bounded batches. Counts against the project's `concurrent_erasures`.
pub async fn erase_subject(pool: &PgPool, access: &Access, subject: &str) -> AppResult<Erasure> {
    access.require(Action::EraseData)?;
    let mut tx = pool.begin().await?;
    limits::admit(&mut tx, access.project_id, Limit::ConcurrentErasures, 1).await?;
    let erasure =
        erasures::create_for_subject(&mut tx, access.project_id, subject, &access.email).await?;
    audit::record(
        &mut *tx,
        access,
        "erase_subject",
        &format!("erasure #{}", erasure.id),
        serde_json::json!({"erasure": erasure.id, "subject": subject}),
    )
    .await?;
    tx.commit().await?;
    Ok(erasure)
}

/// Erases one event's data and what its attempts carried, waiting up to `wait` for its
/// attempts in flight to come back; returns the erasure (done unless that took longer,
/// when a server process finishes it). None: the event was erased before.
pub async fn erase_event(
    pool: &PgPool,
    access: &Access,
    event_id: &EventId,
    wait: Duration,
) -> AppResult<Option<Erasure>> {
    access.require(Action::EraseData)?;
    let mut tx = pool.begin().await?;
    if erasures::is_erased(&mut *tx, event_id).await? {
        // Still the caller's event to know about: another project's is not found.
        crate::db::events::get(pool, access.project_id, event_id).await?;
        return Ok(None);
    }
    let erasure =
        erasures::create_for_event(&mut tx, access.project_id, event_id, &access.email).await?;
    audit::record(
        &mut *tx,
        access,
        "erase_event",
        event_id,
        serde_json::json!({"erasure": erasure.id}),
    )
    .await?;
    tx.commit().await?;
    let deadline = Instant::now() + wait;
    loop {
        let step = erasures::step(pool, Some(erasure.id)).await?;
        if !matches!(step, Some((_, s)) if !s.done) || Instant::now() >= deadline {
            break;
        }
        if matches!(step, Some((_, s)) if s.waiting) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(Some(
        erasures::get(pool, access.project_id, erasure.id).await?,
    ))
}

/// Erasures this process runs at once as soon as they are asked for; the rest wait for
/// the runner's next pass (within a second).
static STARTED_AT_ONCE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// Starts working on an erasure now, in this process, for up to `budget`, when fewer
/// than two are being started so; the runner of any process takes over after that.
pub fn start_now(pool: &PgPool, id: i64, budget: Duration) {
    let Ok(permit) = STARTED_AT_ONCE.try_acquire() else {
        return;
    };
    let pool = pool.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let deadline = Instant::now() + budget;
        while Instant::now() < deadline {
            match erasures::step(&pool, Some(id)).await {
                Ok(Some((_, s))) if !s.done && !s.waiting => {}
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(erasure = id, error = %e, "erasure step failed");
                    break;
                }
            }
        }
    });
}

pub async fn get(pool: &PgPool, access: &Access, id: i64) -> AppResult<Erasure> {
    access.require(Action::ReadDeliveries)?;
    erasures::get(pool, access.project_id, id).await
}
