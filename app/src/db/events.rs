//! Event ingestion: the one way events enter Posthorn. The event row and one pending
//! delivery per subscribed endpoint are written in one transaction.

use crate::core::{EndpointId, EventId, ProjectId};
use std::{collections::HashMap, sync::Arc};

use chrono::{DateTime, Utc};
use sqlx::PgPool;

pub use super::event_reads::{get, page, recent_types, types_seen, StoredEvent, TypeSeen};
use super::{
    group_commit::{GroupCommit, Lone},
    queue::enqueue::{AttemptOf, Inserted, Lane, LeaseTo, NewAttempt},
    queue::handoff::{Claimed, Handoff, Reserved},
    targets::{Target, TargetCache},
};
use crate::{
    core::{
        event_type::EventType,
        ids::{new_event_id, new_request_id},
        status::Trigger,
    },
    error::{AppError, AppResult},
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ingested {
    pub event_id: EventId,
    pub deliveries: i32,
    pub created_at: DateTime<Utc>,
    /// True when the client's idempotency key matched an earlier event.
    pub repeated: bool,
}

/// Stores the event and fans it out to every enabled endpoint subscribed to its type.
/// `data_json` must be valid JSON text; it is stored byte for byte.
pub async fn ingest(
    pool: &PgPool,
    project_id: ProjectId,
    event_type: &EventType,
    data_json: &str,
    client_id: Option<&str>,
) -> AppResult<Ingested> {
    ingest_handing(
        pool,
        project_id,
        event_type,
        data_json,
        client_id,
        None,
        Via::default(),
    )
    .await
}

/// Where ingest in a server process sends its work: fresh attempts to its dispatcher
/// ([`Handoff`]), lone events to the writers that store them together ([`GroupCommit`]).
/// Neither: every attempt waits for a claim, every event is stored by its own request.
#[derive(Clone, Copy, Default)]
pub struct Via<'a> {
    pub handoff: Option<&'a dyn Handoff>,
    pub group: Option<&'a GroupCommit>,
    /// Endpoints this process read before, with the version of the project's endpoints
    /// that the request's API key lookup saw: a lone event reuses what was read at that
    /// version instead of reading it again.
    pub targets: Option<(&'a TargetCache, i64)>,
}

/// One event to store, as [`ingest_all`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct NewEvent<'a> {
    pub event_type: &'a EventType,
    /// Valid JSON text, stored byte for byte.
    pub data_json: &'a str,
    /// The client's idempotency key (stored hashed, see [`crate::core::idempotency`]).
    pub client_id: Option<&'a str>,
    pub ordering_key: Option<&'a str>,
    /// The data subjects it names (checked: at most ten, none empty).
    pub subjects: Option<&'a [String]>,
    pub trace: Trace<'a>,
}

/// The W3C trace context an event is accepted under (checked text, see
/// [`crate::core::trace_context`]): stored with it so that each attempt joins the trace.
/// `propagate`: its project passes the context on to receivers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Trace<'a> {
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
    pub propagate: bool,
}

/// [`ingest`] with an ordering key (each first attempt joins the end of its endpoint's
/// lane for that key, see [`super::lanes`]), handing the first attempts to unthrottled
/// endpoints that are not waiting in a lane to `via.handoff` (the dispatcher in this process)
/// as far as it has room; the rest wait for a claim.
pub async fn ingest_handing(
    pool: &PgPool,
    project_id: ProjectId,
    event_type: &EventType,
    data_json: &str,
    client_id: Option<&str>,
    ordering_key: Option<&str>,
    via: Via<'_>,
) -> AppResult<Ingested> {
    let event = NewEvent {
        event_type,
        data_json,
        client_id,
        ordering_key,
        subjects: None,
        trace: Trace::default(),
    };
    let mut stored = ingest_all(pool, project_id, &[event], via).await?;
    stored.pop().ok_or(AppError::Db(sqlx::Error::RowNotFound))
}

/// Stores the events in one transaction, in order (a batch is taken whole or not at
/// all, with one commit), each fanned out as [`ingest_handing`] does; an event whose
/// idempotency key was seen before, earlier in the batch too, answers as first stored.
pub async fn ingest_all(
    pool: &PgPool,
    project_id: ProjectId,
    events: &[NewEvent<'_>],
    via: Via<'_>,
) -> AppResult<Vec<Ingested>> {
    let keys: Vec<Option<&str>> = events.iter().map(|e| e.client_id).collect();
    let keys = super::idempotency::stored_keys(pool, project_id, &keys).await?;
    let events: Vec<NewEvent> = (events.iter().zip(&keys))
        .map(|(e, key)| NewEvent {
            client_id: key.as_deref(),
            ..*e
        })
        .collect();
    let events = events.as_slice();
    let handoff = via.handoff;
    // The common request, one event without an ordering key, needs no lane: it is
    // stored by one statement, its own transaction.
    if let [event @ NewEvent {
        ordering_key: None, ..
    }] = events
    {
        return Ok(vec![ingest_one(pool, project_id, event, via).await?]);
    }
    let mut tx = pool.begin().await?;
    let mut types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let (targets, _) = super::targets::find(&mut *tx, project_id, &types).await?;
    let mut by_type: HashMap<&str, Vec<&Target>> = HashMap::new();
    for t in &targets {
        by_type.entry(t.event_type.as_str()).or_default().push(t);
    }
    let targets_of =
        |event_type: &str| -> &[&Target] { by_type.get(event_type).map_or(&[], Vec::as_slice) };
    // Several events may join lanes: every key is locked at once, in the global order,
    // before the first joins, or two batches could each hold a key the other waits for.
    if events.iter().filter(|e| e.ordering_key.is_some()).count() > 1 {
        let keys: Vec<super::queue::lanes::KeyLock> = events
            .iter()
            .filter_map(|e| e.ordering_key.map(|k| (project_id, k.to_string())))
            .collect();
        super::queue::lanes::lock_all(&mut tx, keys).await?;
    }
    let mut stored = Vec::with_capacity(events.len());
    let mut handed: Vec<(Reserved, Vec<Claimed>)> = Vec::new();
    let mut waiting = false;
    for event in events {
        let (targets, filtered_out) = super::targets::pass(
            targets_of(event.event_type.as_str()),
            event.event_type.as_str(),
            event.data_json,
            event.subjects.unwrap_or_default(),
        );
        let targets = targets.as_slice();
        let deliveries = targets.len() as i32;
        let event_id = new_event_id();
        let inserted: Option<DateTime<Utc>> = sqlx::query_scalar!(
            r#"INSERT INTO events (event_id, project_id, event_type, data, client_id, deliveries, ordering_key, subjects, filtered_out, traceparent, tracestate)
             VALUES ($1, $2, $3, $4::json, $5, $6, $7, $8, $9::jsonb, $10, $11)
             ON CONFLICT (project_id, client_id) WHERE client_id IS NOT NULL DO NOTHING
             RETURNING created_at AS "created_at: DateTime<Utc>""#,
            &event_id,
            project_id.get(),
            event.event_type.as_str(),
            event.data_json as _,
            event.client_id,
            deliveries,
            event.ordering_key,
            event.subjects,
            filtered_out as _,
            event.trace.traceparent,
            event.trace.tracestate,
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(created_at) = inserted else {
            // Seen before: committed by another request (the insert waited for it) or
            // stored earlier in this transaction.
            stored.push(first_stored(&mut *tx, project_id, event.client_id).await?);
            continue;
        };
        let mut attempts = first_attempts(project_id, &EventId::from(&event_id), event, targets);
        super::queue::lanes::join(&mut tx, &mut attempts).await?;
        // A batch's transaction does not wait for a running claim: its events go to
        // the claim.
        let reserved = reserve(handoff, project_id, targets, &attempts, events.len() == 1).await;
        let taken = taken_by(reserved.as_ref(), targets);
        let lease_to = lease_to(reserved.as_ref(), &taken);
        let rows = super::queue::enqueue::insert_leased(&mut tx, &attempts, lease_to).await?;
        let claimed = handed_rows(created_at, event, &attempts, targets, rows);
        waiting |= deliveries as usize > claimed.len();
        if let Some(r) = reserved {
            handed.push((r, claimed));
        }
        stored.push(Ingested {
            event_id: EventId::from(event_id),
            deliveries,
            created_at,
            repeated: false,
        });
    }
    tx.commit().await?;
    for (r, rows) in handed {
        r.deliver(rows);
    }
    if waiting {
        super::wakeup::wake_dispatchers(pool).await;
    }
    Ok(stored)
}

/// One event without an ordering key: its endpoints are read, room is reserved with
/// the dispatcher, then one statement stores the event and its attempts (two round
/// trips and one commit in all), together with other requests' lone events when `via`
/// has a [`GroupCommit`]. An endpoint disabled between the two is one disabled just
/// after the event was accepted: its attempt waits in the queue as it would then.
async fn ingest_one(
    pool: &PgPool,
    project_id: ProjectId,
    event: &NewEvent<'_>,
    via: Via<'_>,
) -> AppResult<Ingested> {
    let alone;
    let kept = match via.group {
        Some(group) => group.kept(),
        None => {
            alone = super::kept::Kept::new(pool.clone(), 0);
            &alone
        }
    };
    let event_type = event.event_type.as_str();
    let kept_targets = via
        .targets
        .and_then(|(cache, version)| cache.get(project_id, version, event_type));
    let found = match kept_targets {
        Some(found) => found,
        None => {
            let mut conn = kept.get().await?;
            let found = super::targets::find(&mut *conn, project_id, &[event_type]).await;
            let (found, version) = conn.keep_if_ok(found)?;
            let found = Arc::new(found);
            if let (Some((cache, _)), Some(version)) = (via.targets, version) {
                cache.put(project_id, version, event_type, found.clone());
            }
            found
        }
    };
    let all: Vec<&Target> = found.iter().collect();
    let (targets, filtered_out) = super::targets::pass(
        &all,
        event.event_type.as_str(),
        event.data_json,
        event.subjects.unwrap_or_default(),
    );
    let deliveries = targets.len() as i32;
    let event_id = new_event_id();
    let attempts = first_attempts(project_id, &EventId::from(&event_id), event, &targets);
    let reserved = reserve(via.handoff, project_id, &targets, &attempts, true).await;
    let taken = taken_by(reserved.as_ref(), &targets);
    let lease = lease_to(reserved.as_ref(), &taken).map(|l| (l.worker.to_string(), l.lease));
    // The request keeps what the dispatcher needs of the attempts; the store gets a copy.
    let lone = Lone {
        project_id,
        event_id: EventId::from(event_id.clone()),
        event_type: event.event_type.as_str().to_string(),
        data: event.data_json.to_string(),
        client_id: event.client_id.map(str::to_string),
        subjects: event
            .subjects
            .map(|s| serde_json::to_string(s).unwrap_or_default()),
        filtered_out,
        traceparent: event.trace.traceparent.map(str::to_string),
        tracestate: event.trace.tracestate.map(str::to_string),
        attempts: attempts.clone(),
        taken,
        lease,
    };
    let stored = match via.group {
        Some(group) => group.store(lone).await?,
        None => super::group_commit::store(kept, std::slice::from_ref(&lone))
            .await?
            .pop()
            .unwrap_or_default(),
    };
    let Some(created_at) = stored.created_at else {
        // Seen before (the insert waited for the request that stored it); the
        // reservation goes back as it drops.
        return first_stored(pool, project_id, event.client_id).await;
    };
    let claimed = handed_rows(created_at, event, &attempts, &targets, stored.rows);
    if let Some(r) = reserved {
        r.deliver(claimed);
    }
    Ok(Ingested {
        event_id: EventId::from(event_id),
        deliveries,
        created_at,
        repeated: false,
    })
}

/// The event stored first under this idempotency key.
async fn first_stored<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    project_id: ProjectId,
    client_id: Option<&str>,
) -> AppResult<Ingested> {
    let first = sqlx::query!(
        r#"SELECT event_id, deliveries, created_at AS "created_at: DateTime<Utc>" FROM events
            WHERE project_id = $1 AND client_id = $2"#,
        project_id.get(),
        client_id,
    )
    .fetch_one(conn)
    .await?;
    Ok(Ingested {
        event_id: EventId::from(first.event_id),
        deliveries: first.deliveries,
        created_at: first.created_at,
        repeated: true,
    })
}

/// The first attempt of the event to each endpoint, in the order of `targets`.
fn first_attempts(
    project_id: ProjectId,
    event_id: &EventId,
    event: &NewEvent<'_>,
    targets: &[&Target],
) -> Vec<NewAttempt> {
    targets
        .iter()
        .map(|t| NewAttempt {
            of: AttemptOf {
                project_id,
                event_id: event_id.clone(),
                event_type: event.event_type.as_str().to_string(),
                endpoint_id: t.id,
                target_url: t.url.clone(),
            },
            attempt: 1,
            trigger: Trigger::Auto,
            triggered_by: None,
            scheduled_at: None,
            chain_started_at: None,
            request_id: new_request_id(),
            ordering_key: event.ordering_key.map(str::to_string),
            lane: match event.ordering_key {
                Some(_) => Lane::Join { waits_for: None },
                None => Lane::Off,
            },
        })
        .collect()
}

/// Room with the dispatcher of this process for the attempts it can send at once
/// (unthrottled endpoints without client certificates, not waiting in a lane). Reserved only once the event is
/// known to be new or about to be, so a repeated event holds no room for long; given
/// back on any error. A single event may wait for a running claim that could take the
/// room (it ends within milliseconds); otherwise its attempts are left to the claim.
async fn reserve<'h>(
    handoff: Option<&'h dyn Handoff>,
    project_id: ProjectId,
    targets: &[&Target],
    attempts: &[NewAttempt],
    may_wait: bool,
) -> Option<Reserved<'h>> {
    let h = handoff?;
    let plain: Vec<EndpointId> = targets
        .iter()
        .zip(attempts)
        .filter(|(t, a)| !t.throttled && !t.queued_only && !a.lane.is_waiting())
        .map(|(t, _)| t.id)
        .collect();
    let endpoints = if plain.is_empty() {
        Vec::new()
    } else {
        match h.reserve(project_id, &plain) {
            Ok(taken) => taken,
            Err(busy) if may_wait => {
                busy.wait(CLAIM_WAIT).await;
                h.reserve(project_id, &plain).unwrap_or_default()
            }
            Err(_) => Vec::new(),
        }
    };
    Some(Reserved {
        handoff: h,
        project_id,
        endpoints,
    })
}

/// Which of the targets go to the dispatcher already leased.
fn taken_by(reserved: Option<&Reserved<'_>>, targets: &[&Target]) -> Vec<bool> {
    let handed_to = reserved.filter(|r| !r.endpoints.is_empty());
    targets
        .iter()
        .map(|t| handed_to.is_some_and(|r| r.endpoints.contains(&t.id)))
        .collect()
}

fn lease_to<'a>(reserved: Option<&'a Reserved<'_>>, taken: &'a [bool]) -> Option<LeaseTo<'a>> {
    reserved
        .filter(|r| !r.endpoints.is_empty())
        .map(|r| LeaseTo {
            worker: r.handoff.worker(),
            lease: chrono::Duration::from_std(r.handoff.lease()).unwrap_or_default(),
            taken,
        })
}

/// The rows inserted already leased, as the dispatcher sends them.
fn handed_rows(
    created_at: DateTime<Utc>,
    event: &NewEvent<'_>,
    attempts: &[NewAttempt],
    targets: &[&Target],
    rows: Vec<Inserted>,
) -> Vec<Claimed> {
    let mut claimed: Vec<Claimed> = Vec::new();
    let now = Utc::now();
    for row in rows {
        let Some(lease_expires_at) = row.lease_expires_at else {
            continue;
        };
        let Some((a, t)) = attempts
            .iter()
            .zip(targets)
            .find(|(a, _)| a.request_id == row.request_id)
        else {
            continue;
        };
        claimed.push(Claimed {
            id: row.id,
            created_at: row.created_at,
            of: a.of.clone(),
            attempt: 1,
            trigger: Trigger::Auto,
            request_id: row.request_id,
            chain_started_at: None,
            lease_expires_at,
            event_created_at: created_at,
            data: event.data_json.to_string(),
            endpoint_url: t.url.clone(),
            secret: t.secret.clone(),
            previous_secret: t.previous_secret(now),
            custom_headers: t.custom_headers.clone(),
            client_cert: None,
            client_key: None,
            signature_scheme: t.signature_scheme.clone(),
            signing_key: t.signing_key.clone(),
            scheme_switched_at: t.scheme_switched_at,
            start_at: None,
            erased: false,
            traceparent: event.trace.traceparent.map(str::to_string),
            tracestate: event.trace.tracestate.map(str::to_string),
            trace_propagation: event.trace.propagate,
            destination: t.destination.clone(),
            destination_settings: t.destination_settings.clone(),
            destination_credentials: t.destination_credentials.clone(),
        });
    }
    claimed
}

/// The longest an ingest waits for a running claim before it leaves its attempts to the
/// next claim instead.
const CLAIM_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
