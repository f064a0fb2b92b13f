//! `/events`: ingest (fan-out through [`app::db::events::ingest`]) and poll by cursor.

use app::{
    core::{
        cursor::Cursor,
        event_type::EventType,
        limits::{json_depth, reached, Limit},
        ratelimit::{quota, retry_after},
        text::{no_nul, replace_nul_escapes},
    },
    db::{
        events::{self, StoredEvent},
        rate_counters,
    },
    error::AppError,
};
use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Extension, Json,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sqlx::PgPool;

/// The dispatcher of this process, if it takes attempts straight from ingest.
type Handoff = Option<std::sync::Arc<dyn app::db::handoff::Handoff>>;
/// The writers that take concurrent requests' lone events together, if any.
type Group = Option<std::sync::Arc<app::db::group_commit::GroupCommit>>;

use super::{
    error::ApiErrorBody,
    page_limit,
    paging::{cut_page, PageMeta},
    parse_cursor, parse_since, ApiError, ApiJson, ApiQuery, Caller,
};

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEvent {
    /// Lower-case words joined by dots.
    #[schema(
        pattern = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$",
        max_length = 128,
        example = "payment.succeeded"
    )]
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

/// Events in one batch at most.
pub const MAX_BATCH: usize = 100;

/// The longest idempotency key, in the body's `id` or the header.
const MAX_KEY: usize = 255;

/// What every event, alone or in a batch, must be before anything is stored: a known
/// shape of type, an object as `data` (as the document says) nested no deeper than the
/// project's `data_depth`, a key of bounded length. `at` prefixes the field names in
/// errors (`events[3].`).
fn check_item<'a>(e: &'a CreateEvent, at: &str, max_depth: u32) -> Result<Item<'a>, ApiError> {
    let event_type =
        EventType::parse(&e.event).map_err(|m| ApiError::invalid(format!("{at}event: {m}")))?;
    if !e.data.get().trim_start().starts_with('{') {
        return Err(ApiError::invalid(format!(
            "{at}data: must be a JSON object"
        )));
    }
    // The body's parser skips `data` without a depth limit; PostgreSQL's does not, and
    // a failed insert would take a whole group of other requests' events with it.
    if json_depth(e.data.get(), max_depth) > max_depth {
        return Err(ApiError::from(AppError::LimitReached(format!(
            "{at}data: {}",
            reached(Limit::DataDepth, max_depth as u64)
        ))));
    }
    let key = e.id.clone().filter(|k| !k.is_empty());
    if let Some(k) = &key {
        if k.len() > MAX_KEY {
            return Err(ApiError::invalid(format!(
                "{at}id (idempotency key) must be at most {MAX_KEY} characters"
            )));
        }
        no_nul(&format!("{at}id"), k).map_err(ApiError::invalid)?;
    }
    if let Some(k) = &e.ordering_key {
        let n = k.chars().count();
        if n == 0 || n > MAX_ORDERING_KEY {
            return Err(ApiError::invalid(format!(
                "{at}ordering_key: between 1 and {MAX_ORDERING_KEY} characters, not {n}"
            )));
        }
        no_nul(&format!("{at}ordering_key"), k).map_err(ApiError::invalid)?;
    }
    if let Some(subjects) = &e.subjects {
        check_subjects(subjects).map_err(|m| ApiError::invalid(format!("{at}subjects{m}")))?;
    }
    // The one character PostgreSQL cannot keep in a payload becomes U+FFFD (README).
    let data = replace_nul_escapes(e.data.get());
    Ok(Item {
        event_type,
        key,
        data,
        ordering_key: e.ordering_key.as_deref(),
        subjects: e.subjects.as_deref().filter(|s| !s.is_empty()),
    })
}

/// The rules of [`check_subjects`], as a schema.
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

/// At most this many subjects per event, each at most [`MAX_SUBJECT`] characters.
pub const MAX_SUBJECTS: usize = 10;
pub const MAX_SUBJECT: usize = 255;

/// The message's tail after the field name when the subjects are not acceptable.
fn check_subjects(subjects: &[String]) -> Result<(), String> {
    if subjects.len() > MAX_SUBJECTS {
        return Err(format!(
            ": at most {MAX_SUBJECTS} items, not {}",
            subjects.len()
        ));
    }
    for (i, s) in subjects.iter().enumerate() {
        let n = s.chars().count();
        if n == 0 || n > MAX_SUBJECT {
            return Err(format!(
                "[{i}]: between 1 and {MAX_SUBJECT} characters, not {n}"
            ));
        }
        no_nul("", s).map_err(|_| format!("[{i}]: must not contain NUL"))?;
    }
    Ok(())
}

/// The longest ordering key.
const MAX_ORDERING_KEY: usize = 255;

/// One event, checked and ready to store (`data` is copied only if it had to change).
struct Item<'a> {
    event_type: EventType,
    key: Option<String>,
    data: std::borrow::Cow<'a, str>,
    ordering_key: Option<&'a str>,
    subjects: Option<&'a [String]>,
}

/// One stored event, as `GET /events` and `GET /events/{id}` return it.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Event {
    #[schema(example = "evt_01JD8X0000000000000000AB")]
    pub id: String,
    #[schema(pattern = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$", max_length = 128)]
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
    pub endpoint_id: i64,
    #[schema(example = "the filter was false")]
    pub reason: String,
}

impl From<StoredEvent> for Event {
    fn from(e: StoredEvent) -> Event {
        Event {
            id: e.event_id,
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
    ApiJson(body): ApiJson<CreateEventBatch>,
) -> Result<Response, ApiError> {
    let n = body.events.len();
    if n == 0 || n > MAX_BATCH {
        return Err(ApiError::invalid(format!(
            "events: between 1 and {MAX_BATCH} items, not {n}"
        )));
    }
    // Every item is checked before any is stored: a batch is refused whole or taken whole.
    let mut items = Vec::with_capacity(n);
    for (i, e) in body.events.iter().enumerate() {
        items.push(check_item(e, &format!("events[{i}]."), caller.data_depth)?);
    }
    // The request itself was counted; the other events are counted now, and given back
    // if they do not fit in the minute.
    let extra = (n - 1) as i32;
    if extra > 0 {
        let count = rate_counters::hit_by(&pool, &rate.bucket, rate.window, extra).await?;
        if count > rate.limit {
            rate_counters::hit_by(&pool, &rate.bucket, rate.window, -extra).await?;
            let now = chrono::Utc::now().timestamp();
            let wait = retry_after(&quota(rate.limit, count, now), now);
            let mut r = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!(
                    "a batch of {n} events needs {n} of this minute's {} units; {} are left; retry in {wait} s",
                    rate.limit,
                    rate.limit.saturating_sub(rate.count)
                ),
            )
            .into_response();
            r.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, wait.into());
            return Ok(r);
        }
    }
    // Checked against their types' schemas once the batch is within the rate limit (past
    // it, a tenant costs no checks); refused, its other events' units go back.
    let typed: Vec<(String, &str, &str)> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            (
                format!("events[{i}]."),
                item.event_type.as_str(),
                &*item.data,
            )
        })
        .collect();
    if let Err(e) = super::schemas::conform(&pool, &targets, &caller, &typed).await {
        if extra > 0 {
            let _ = rate_counters::hit_by(&pool, &rate.bucket, rate.window, -extra).await;
        }
        return Err(e);
    }
    let batch: Vec<events::NewEvent> = items
        .iter()
        .map(|item| events::NewEvent {
            event_type: &item.event_type,
            data_json: &item.data,
            client_id: item.key.as_deref(),
            ordering_key: item.ordering_key,
            subjects: item.subjects,
        })
        .collect();
    // One transaction: the batch is stored whole or not at all.
    let via = events::Via {
        handoff: handoff.as_deref(),
        group: None,
        targets: None,
    };
    let stored = events::ingest_all(&pool, caller.project_id, &batch, via).await;
    let stored = match stored {
        Ok(stored) => stored,
        Err(e) => {
            // Nothing was stored: the units counted for the batch's other events go back.
            if extra > 0 {
                let _ = rate_counters::hit_by(&pool, &rate.bucket, rate.window, -extra).await;
            }
            return Err(e.into());
        }
    };
    let data = stored
        .into_iter()
        .map(|e| EventAccepted {
            id: e.event_id,
            deliveries: e.deliveries,
        })
        .collect();
    let mut r = (StatusCode::ACCEPTED, Json(EventBatchAccepted { data })).into_response();
    r.extensions_mut().insert(super::ExtraUnits(extra as u32));
    Ok(r)
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
    State(pool): State<PgPool>,
    State(handoff): State<Handoff>,
    State(group): State<Group>,
    State(targets): State<std::sync::Arc<app::db::targets::TargetCache>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateEvent>,
) -> Result<impl IntoResponse, ApiError> {
    let header_key = match headers.get("idempotency-key") {
        None => None,
        Some(v) => {
            let k = v
                .to_str()
                .map_err(|_| ApiError::invalid("Idempotency-Key: only visible ASCII characters"))?;
            if k.len() > MAX_KEY {
                return Err(ApiError::invalid(format!(
                    "Idempotency-Key: at most {MAX_KEY} characters"
                )));
            }
            Some(k.to_string())
        }
    };
    let item = check_item(&body, "", caller.data_depth)?;
    let typed = [(String::new(), item.event_type.as_str(), &*item.data)];
    super::schemas::conform(&pool, &targets, &caller, &typed).await?;
    let client_id = item.key.or(header_key.filter(|k| !k.is_empty()));
    let event = events::NewEvent {
        event_type: &item.event_type,
        data_json: &item.data,
        client_id: client_id.as_deref(),
        ordering_key: item.ordering_key,
        subjects: item.subjects,
    };
    let via = events::Via {
        handoff: handoff.as_deref(),
        group: group.as_deref(),
        targets: Some((&targets, caller.endpoints_version)),
    };
    let ingested = events::ingest_all(&pool, caller.project_id, &[event], via)
        .await?
        .pop()
        .ok_or(AppError::NotFound)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EventAccepted {
            id: ingested.event_id,
            deliveries: ingested.deliveries,
        }),
    ))
}

#[utoipa::path(
    get,
    path = "/events/{id}",
    params(("id" = String, Path, description = "Event id, evt_…")),
    responses((status = 200, body = Event), (status = 404, body = ApiErrorBody))
)]
pub async fn get(
    State(pool): State<PgPool>,
    State(cfg): State<std::sync::Arc<app::cfg::Config>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Event>, ApiError> {
    let event = events::get(&pool, caller.project_id, &id).await?;
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
    params(("id" = String, Path, description = "Event id, evt_…")),
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
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let access = caller.access(app::core::permissions::Action::EraseData)?;
    let event = events::get(&pool, caller.project_id, &id).await?;
    if event.created_at < caller.window_start(&cfg) {
        return Err(AppError::NotFound.into());
    }
    let erasure = app::ops::erasures::erase_event(&pool, &access, &id, ERASE_WAIT).await?;
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
    #[param(pattern = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$", max_length = 128)]
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
