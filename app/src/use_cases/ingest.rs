//! Sending events: one, or a batch of up to 100 stored whole or not at all. Every event is
//! checked ([`crate::core::event_input`]), counted against the minute's rate, checked
//! against its type's schema, then stored durably and fanned out
//! ([`crate::db::events::ingest_all`]) before the caller answers `202`.

use std::sync::Arc;

use sqlx::PgPool;

use super::schemas::{conform, SchemaScope};
use crate::{
    core::{
        event_input::{self, EventInput},
        ratelimit::{quota, retry_after},
    },
    db::{
        events::{self, Ingested, NewEvent, Trace, Via},
        group_commit::GroupCommit,
        queue::handoff::Handoff,
        rate_counters,
        targets::TargetCache,
    },
    error::AppError,
};

/// The project an API key speaks for, as its lookup saw it.
#[derive(Clone, Copy, Debug)]
pub struct Sender {
    pub schemas: SchemaScope,
    /// The deepest `data` the project accepts (its `data_depth` limit).
    pub data_depth: u32,
}

/// Where accepted events go besides the database: this process's dispatcher, the
/// writers that group lone events of concurrent requests, the endpoints read before.
#[derive(Clone, Copy)]
pub struct Routes<'a> {
    pub handoff: Option<&'a dyn Handoff>,
    pub group: Option<&'a GroupCommit>,
    pub targets: &'a Arc<TargetCache>,
}

/// The minute's rate counter the request was counted in (one unit); a batch costs one
/// more per further event.
#[derive(Clone, Copy, Debug)]
pub struct Units<'a> {
    pub bucket: &'a str,
    pub window: i64,
    pub limit: u32,
    pub count: u32,
}

/// Why a batch was not taken.
#[derive(Debug)]
pub enum Refused {
    Invalid(AppError),
    /// The batch needs more of the minute's units than are left: nothing was stored.
    OverRate {
        message: String,
        retry_after: i64,
    },
}

impl From<AppError> for Refused {
    fn from(e: AppError) -> Refused {
        Refused::Invalid(e)
    }
}

/// Sends one event. `header_key` is the `Idempotency-Key` header, used when the body
/// carries no `id`; `trace` the context the call came with.
pub async fn send_one(
    pool: &PgPool,
    routes: Routes<'_>,
    sender: Sender,
    input: EventInput<'_>,
    header_key: Option<String>,
    trace: Trace<'_>,
) -> Result<Ingested, AppError> {
    let item = event_input::check(input, "", sender.data_depth)?;
    let typed = [(String::new(), item.event_type.as_str(), &*item.data)];
    conform(pool, routes.targets, sender.schemas, &typed).await?;
    let client_id = item.key.or(header_key.filter(|k| !k.is_empty()));
    let event = NewEvent {
        event_type: &item.event_type,
        data_json: &item.data,
        client_id: client_id.as_deref(),
        ordering_key: item.ordering_key,
        subjects: item.subjects,
        trace,
    };
    let via = Via {
        handoff: routes.handoff,
        group: routes.group,
        targets: Some((routes.targets, sender.schemas.endpoints_version)),
    };
    let project = sender.schemas.project_id;
    (events::ingest_all(pool, project, &[event], via).await?)
        .pop()
        .ok_or(AppError::NotFound)
}

/// Sends a batch in one transaction, in array order. The request's own unit was
/// counted; the other events' units are counted here and given back if the batch is
/// refused after that (over the rate, a schema, or the database).
pub async fn send_batch(
    pool: &PgPool,
    routes: Routes<'_>,
    sender: Sender,
    units: Units<'_>,
    inputs: &[EventInput<'_>],
    trace: Trace<'_>,
) -> Result<Vec<Ingested>, Refused> {
    let items = event_input::check_batch(inputs, sender.data_depth)?;
    let n = items.len();
    let extra = (n - 1) as i32;
    let give_back = || async {
        if extra > 0 {
            let _ = rate_counters::hit_by(pool, units.bucket, units.window, -extra).await;
        }
    };
    if extra > 0 {
        let count = rate_counters::hit_by(pool, units.bucket, units.window, extra).await?;
        if count > units.limit {
            give_back().await;
            let now = chrono::Utc::now().timestamp();
            let wait = retry_after(&quota(units.limit, count, now), now);
            let message = format!(
                "a batch of {n} events needs {n} of this minute's {} units; {} are left; retry in {wait} s",
                units.limit,
                units.limit.saturating_sub(units.count)
            );
            return Err(Refused::OverRate {
                message,
                retry_after: wait,
            });
        }
    }
    // Checked against their types' schemas once the batch is within the rate limit (past
    // it, a tenant costs no checks).
    let typed: Vec<(String, &str, &str)> = (items.iter().enumerate())
        .map(|(i, item)| {
            (
                format!("events[{i}]."),
                item.event_type.as_str(),
                &*item.data,
            )
        })
        .collect();
    if let Err(e) = conform(pool, routes.targets, sender.schemas, &typed).await {
        give_back().await;
        return Err(e.into());
    }
    let batch: Vec<NewEvent> = (items.iter())
        .map(|item| NewEvent {
            event_type: &item.event_type,
            data_json: &item.data,
            client_id: item.key.as_deref(),
            ordering_key: item.ordering_key,
            subjects: item.subjects,
            trace,
        })
        .collect();
    let via = Via {
        handoff: routes.handoff,
        group: None,
        targets: None,
    };
    match events::ingest_all(pool, sender.schemas.project_id, &batch, via).await {
        Ok(stored) => Ok(stored),
        Err(e) => {
            give_back().await;
            Err(e.into())
        }
    }
}
