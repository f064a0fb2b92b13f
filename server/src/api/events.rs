//! `/events`: ingest (through [`app::use_cases::ingest`]) and poll by cursor.

use app::core::{EndpointId, EventId};
use app::{
    core::{
        cursor::Cursor,
        event_input::{self, EventInput, MAX_SUBJECT, MAX_SUBJECTS},
        event_type::EventType,
    },
    db::events::{self, StoredEvent},
    error::AppError,
    use_cases::{
        ingest::{self, Refused, Routes, Sender, Units},
        schemas::SchemaScope,
    },
};
use axum::{
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Extension, Json,
};
use serde::{Deserialize, Serialize};

use crate::telemetry::RequestTrace;
use serde_json::value::RawValue;
use sqlx::PgPool;

/// The dispatcher of this process, if it takes attempts straight from ingest.
type Handoff = Option<std::sync::Arc<dyn app::db::queue::handoff::Handoff>>;

use super::{
    error::ApiErrorBody,
    page_limit,
    paging::{cut_page, EventIdPath, PageMeta},
    parse_cursor, parse_since, ApiError, ApiJson, ApiQuery, Caller,
};

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEvent {
    // No doc comment: the type's own schema describes it (a description here would wrap it).
    #[schema(value_type = EventType, inline)]
    pub event: String,
    #[schema(value_type = Object)]
    pub data: Box<RawValue>,
    /// The client's idempotency key (so is an `Idempotency-Key` header).
    #[schema(max_length = 255, pattern = r"^[^\u0000]*$")]
    pub id: Option<String>,
    /// Per endpoint, events with the same key are delivered one at a time in the order
    /// they were accepted (a batch's items in array order).
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^[^\u0000]+$",
        example = "customer_4812"
    )]
    pub ordering_key: Option<String>,
    /// The data subjects the event is about (`user:42`), for erasure by subject.
    #[schema(schema_with = subjects_schema)]
    pub subjects: Option<Vec<String>>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct EventAccepted {
    /// The `evt_…` id, also when the request carried an idempotency key.
    pub id: String,
    /// How many endpoints the event was fanned out to.
    pub deliveries: i32,
}

/// Up to 100 events in one request, fanned out in array order; each item's `id` is its
/// own idempotency key. Costs one rate-limit unit per event.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEventBatch {
    #[schema(min_items = 1, max_items = 100)]
    pub events: Vec<CreateEvent>,
}

/// The batch's results, in the order of its items.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EventBatchAccepted {
    pub data: Vec<EventAccepted>,
}

/// The rules of [`event_input`]'s subjects, as a schema.
fn subjects_schema() -> utoipa::openapi::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(MAX_SUBJECT))
        .pattern(Some(r"^[^\u0000]+$"));
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(item)
        .max_items(Some(MAX_SUBJECTS))
        .description(Some(
            "The data subjects the event is about (`user:42`), for erasure by subject.",
        ))
        .examples([serde_json::json!(["user:42"])])
        .build()
}

/// The request's event as the use case takes it.
fn input(e: &CreateEvent) -> EventInput<'_> {
    EventInput {
        event: &e.event,
        data: e.data.get(),
        id: e.id.as_deref(),
        ordering_key: e.ordering_key.as_deref(),
        subjects: e.subjects.as_deref(),
    }
}

/// The project the request's key speaks for, as ingest needs it.
fn sender(caller: &Caller) -> Sender {
    Sender {
        schemas: SchemaScope {
            project_id: caller.project_id,
            endpoints_version: caller.endpoints_version,
            event_schemas: caller.event_schemas,
        },
        data_depth: caller.data_depth,
    }
}

/// One stored event, as `GET /events` and `GET /events/{id}` return it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Event {
    #[schema(example = "evt_01JD8X0000000000000000AB")]
    pub id: String,
    #[schema(value_type = EventType, inline)]
    pub event: String,
    /// The `data` the event was sent with, unchanged; `null` once erased.
    #[schema(value_type = Option<Object>)]
    pub data: Box<RawValue>,
    /// How many endpoints the event was fanned out to.
    pub deliveries: i32,
    #[schema(required = true)]
    pub ordering_key: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// The data subjects it was sent with (`[]` when none, or once erased).
    pub subjects: Vec<String>,
    /// When its data was erased, and by which erasure; null while it is kept.
    #[schema(required = true)]
    pub erased_at: Option<chrono::DateTime<chrono::Utc>>,
    #[schema(required = true)]
    pub erasure_id: Option<i64>,
    /// The endpoints subscribed to its type whose filters it did not pass, and why (a
    /// filter false, or failing on this event, e.g. for a missing key): they had no
    /// attempt. `[]` when none.
    pub filtered_out: Vec<FilteredOut>,
}

/// An endpoint an event's filter kept it from.
#[derive(Serialize, utoipa::ToSchema)]
pub struct FilteredOut {
    #[schema(value_type = i64)]
    pub endpoint_id: EndpointId,
    #[schema(example = "the filter was false")]
    pub reason: String,
}

impl From<StoredEvent> for Event {
    fn from(e: StoredEvent) -> Event {
        Event {
            id: String::from(e.event_id),
            event: e.event_type,
            data: e.data.0,
            deliveries: e.deliveries,
            ordering_key: e.ordering_key,
            created_at: e.created_at,
            subjects: e.subjects.unwrap_or_default(),
            erased_at: e.erased_at,
            erasure_id: e.erasure_id,
            filtered_out: e
                .filtered_out
                .map(|f| f.0)
                .unwrap_or_default()
                .into_iter()
                .map(|s| FilteredOut {
                    endpoint_id: s.endpoint_id,
                    reason: s.reason,
                })
                .collect(),
        }
    }
}

#[utoipa::path(
    post,
    path = "/events/batch",
    request_body = CreateEventBatch,
    responses((status = 202, body = EventBatchAccepted, description = "Every item stored and fanned out, in array order; an item whose idempotency key was seen before answers its first response"),
        (status = 503, body = ApiErrorBody, description = "`busy`: the project's schema checks are busy; retry shortly"))
)]
pub async fn create_batch(
    State(pool): State<PgPool>,
    State(handoff): State<Handoff>,
    State(targets): State<std::sync::Arc<app::db::targets::TargetCache>>,
    Extension(caller): Extension<Caller>,
    Extension(rate): Extension<super::RateWindow>,
    trace: Option<Extension<RequestTrace>>,
    ApiJson(body): ApiJson<CreateEventBatch>,
) -> Result<Response, ApiError> {
    let inputs: Vec<EventInput> = body.events.iter().map(input).collect();
    let units = Units {
        bucket: &rate.bucket,
        window: rate.window,
        limit: rate.limit,
        count: rate.count,
    };
    let routes = Routes {
        handoff: handoff.as_deref(),
        group: None,
        targets: &targets,
    };
    let parent = trace.as_ref().map(|t| t.parent.to_string());
    let trace = trace_of(&caller, parent.as_deref(), trace.as_deref());
    let stored =
        match ingest::send_batch(&pool, routes, sender(&caller), units, &inputs, trace).await {
            Ok(stored) => stored,
            Err(Refused::Invalid(e)) => return Err(e.into()),
            Err(Refused::OverRate {
                message,
                retry_after,
            }) => {
                let mut r = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message)
                    .into_response();
                r.headers_mut()
                    .insert(axum::http::header::RETRY_AFTER, retry_after.into());
                return Ok(r);
            }
        };
    let extra = (inputs.len() - 1) as u32;
    let data = stored
        .into_iter()
        .map(|e| EventAccepted {
            id: String::from(e.event_id),
            deliveries: e.deliveries,
        })
        .collect();
    let mut r = (StatusCode::ACCEPTED, Json(EventBatchAccepted { data })).into_response();
    r.extensions_mut().insert(super::ExtraUnits(extra));
    Ok(r)
}

/// The trace context an event is stored with: the request's (see
/// [`crate::telemetry::observe_requests`]), and whether its project passes it on.
fn trace_of<'a>(
    caller: &Caller,
    parent: Option<&'a str>,
    trace: Option<&'a RequestTrace>,
) -> events::Trace<'a> {
    events::Trace {
        traceparent: parent,
        tracestate: trace.and_then(|t| t.state.as_deref()),
        propagate: caller.trace_propagation,
    }
}

/// A page of `GET /events`, ascending by (`created_at`, `id`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct EventPage {
    pub data: Vec<Event>,
    pub meta: PageMeta,
}

#[utoipa::path(
    post,
    path = "/events",
    request_body = CreateEvent,
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255, description = "The client's idempotency key, when the body carries no `id`")),
    responses((status = 202, body = EventAccepted, description = "Stored and fanned out; a repeated idempotency key answers the first response"),
        (status = 503, body = ApiErrorBody, description = "`busy`: the project's schema checks are busy; retry shortly"))
)]
pub async fn create(
    State(state): State<crate::state::AppState>,
    Extension(caller): Extension<Caller>,
    trace: Option<Extension<RequestTrace>>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateEvent>,
) -> Result<impl IntoResponse, ApiError> {
    let header = headers
        .get("idempotency-key")
        .map(|v| v.to_str().map_err(|_| ()));
    let header_key = event_input::header_key(header)?;
    let routes = Routes {
        handoff: state.handoff.as_deref(),
        group: state.group.as_deref(),
        targets: &state.targets,
    };
    let parent = trace.as_ref().map(|t| t.parent.to_string());
    let trace = trace_of(&caller, parent.as_deref(), trace.as_deref());
    let ingested = ingest::send_one(
        &state.pool,
        routes,
        sender(&caller),
        input(&body),
        header_key,
        trace,
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EventAccepted {
            id: String::from(ingested.event_id),
            deliveries: ingested.deliveries,
        }),
    ))
}

#[utoipa::path(
    get,
    path = "/events/{id}",
    params(EventIdPath),
    responses((status = 200, body = Event), (status = 404, body = ApiErrorBody))
)]
pub async fn get(
    State(pool): State<PgPool>,
    State(cfg): State<std::sync::Arc<app::cfg::Config>>,
    Extension(caller): Extension<Caller>,
    EventIdPath { id }: EventIdPath,
) -> Result<Json<Event>, ApiError> {
    let event = events::get(&pool, caller.project_id, &EventId::from(&id)).await?;
    if event.created_at < caller.window_start(&cfg) {
        return Err(app::error::AppError::NotFound.into());
    }
    Ok(Json(event.into()))
}

/// How long `DELETE /events/{id}/data` waits for the event's attempts in flight before
/// it answers `202` and leaves the rest to the server.
const ERASE_WAIT: std::time::Duration = std::time::Duration::from_secs(40);

#[utoipa::path(
    delete,
    path = "/events/{id}/data",
    params(EventIdPath),
    responses(
        (status = 204, description = "The event's data, subjects and its attempts' response bodies and headers are erased; its waiting attempts are dead letters (`erased`)"),
        (status = 202, body = super::erasures::Erasure, description = "Erased, but an attempt was still in flight after 40 s: the erasure finishes when it comes back (GET /erasures/{id})"),
        (status = 404, body = ApiErrorBody),
    )
)]
pub async fn erase(
    State(pool): State<PgPool>,
    State(cfg): State<std::sync::Arc<app::cfg::Config>>,
    Extension(caller): Extension<Caller>,
    EventIdPath { id }: EventIdPath,
) -> Result<Response, ApiError> {
    let access = caller.access(app::core::permissions::Action::EraseData)?;
    let event = events::get(&pool, caller.project_id, &EventId::from(&id)).await?;
    if event.created_at < caller.window_start(&cfg) {
        return Err(AppError::NotFound.into());
    }
    let erasure =
        app::use_cases::erasures::erase_event(&pool, &access, &EventId::from(&id), ERASE_WAIT)
            .await?;
    Ok(match erasure {
        Some(e) if e.status != "done" => (
            StatusCode::ACCEPTED,
            Json(super::erasures::Erasure::from(e)),
        )
            .into_response(),
        _ => StatusCode::NO_CONTENT.into_response(),
    })
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListEvents {
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[0-9]{1,16}_[0-9]{1,18}$")]
    pub cursor: Option<String>,
    #[param(minimum = 1, maximum = 200, default = 50)]
    pub limit: Option<i64>,
    /// Only events created at or after this RFC 3339 time.
    #[param(format = DateTime)]
    pub since: Option<String>,
    /// Only events of this type.
    #[serde(rename = "type")]
    #[param(value_type = Option<EventType>, inline)]
    pub event_type: Option<String>,
}

#[utoipa::path(get, path = "/events", params(ListEvents), responses((status = 200, body = EventPage)))]
pub async fn list(
    State(pool): State<PgPool>,
    State(cfg): State<std::sync::Arc<app::cfg::Config>>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<ListEvents>,
) -> Result<Json<EventPage>, ApiError> {
    let limit = page_limit(q.limit)?;
    let after = parse_cursor(q.cursor.as_deref())?;
    // Nothing before the project's window is listed, whatever `since` says.
    let start = caller.window_start(&cfg);
    let since = Some(parse_since(q.since.as_deref())?.map_or(start, |s| s.max(start)));
    // The document gives `type` the event-type pattern: a type no event can have is a
    // mistake to report, not an empty page.
    if let Some(t) = q.event_type.as_deref() {
        EventType::parse(t).map_err(|e| ApiError::invalid(format!("type: {e}")))?;
    }
    let mut rows = events::page(
        &pool,
        caller.project_id,
        after,
        since,
        q.event_type.as_deref(),
        limit + 1,
    )
    .await?;
    let (next, has_more) = cut_page(&mut rows, limit, after, |r| Cursor {
        created_at: r.created_at,
        id: r.seq,
    });
    Ok(Json(EventPage {
        data: rows.into_iter().map(Event::from).collect(),
        meta: PageMeta::new(next, has_more),
    }))
}
