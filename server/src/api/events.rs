//! `/events`: ingest (fan-out through [`app::db::events::ingest`]) and poll by cursor.

use app::{
    core::{cursor::Cursor, event_type::EventType},
    db::events,
};
use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
    Extension, Json,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sqlx::PgPool;

use super::{page_limit, parse_cursor, parse_since, ApiError, ApiJson, ApiQuery, Caller};

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEvent {
    /// Lower-case words joined by dots.
    #[schema(
        pattern = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$",
        example = "payment.succeeded"
    )]
    pub event: String,
    #[schema(value_type = Object)]
    pub data: Box<RawValue>,
    /// The client's idempotency key.
    pub id: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct EventAccepted {
    pub id: String,
    pub deliveries: i32,
}

#[utoipa::path(post, path = "/events", request_body = CreateEvent, responses((status = 202, body = EventAccepted)))]
pub async fn create(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateEvent>,
) -> Result<impl IntoResponse, ApiError> {
    let event_type = EventType::parse(&body.event).map_err(ApiError::invalid)?;
    let header_key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let client_id = body.id.or(header_key).filter(|k| !k.is_empty());
    if client_id.as_ref().is_some_and(|k| k.len() > 255) {
        return Err(ApiError::invalid(
            "id (idempotency key) must be at most 255 characters",
        ));
    }
    let ingested = events::ingest(
        &pool,
        caller.project_id,
        &event_type,
        body.data.get(),
        client_id.as_deref(),
    )
    .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EventAccepted {
            id: ingested.event_id,
            deliveries: ingested.deliveries,
        }),
    ))
}

#[utoipa::path(get, path = "/events/{id}", params(("id" = String, Path, description = "Event id, evt_…")), responses((status = 200), (status = 404)))]
pub async fn get(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(Json(events::get(&pool, caller.project_id, &id).await?))
}

#[derive(Deserialize, utoipa::IntoParams)]
pub struct ListEvents {
    pub cursor: Option<String>,
    pub limit: Option<i64>,
    pub since: Option<String>,
    #[serde(rename = "type")]
    pub event_type: Option<String>,
}

#[utoipa::path(get, path = "/events", params(ListEvents), responses((status = 200)))]
pub async fn list(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<ListEvents>,
) -> Result<impl IntoResponse, ApiError> {
    let limit = page_limit(q.limit)?;
    let after = parse_cursor(q.cursor.as_deref())?;
    let since = parse_since(q.since.as_deref())?;
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
    Ok(Json(page_json(&rows, next, has_more)))
}

/// Trims a page fetched with `limit + 1` rows to `limit`; returns the cursor to resume
/// from (the last row's, or the one the page started after) and whether more are waiting.
pub fn cut_page<T>(
    rows: &mut Vec<T>,
    limit: i64,
    after: Option<Cursor>,
    key: impl Fn(&T) -> Cursor,
) -> (Option<Cursor>, bool) {
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    (rows.last().map(key).or(after), has_more)
}

/// `{"data": [...], "meta": {"next_cursor", "has_more"}}`; the cursor comes with every
/// page, the last one included, so a poller can resume from it later.
pub fn page_json<T: Serialize>(
    rows: &[T],
    next: Option<Cursor>,
    has_more: bool,
) -> serde_json::Value {
    let next = next.unwrap_or(Cursor {
        created_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        id: 0,
    });
    serde_json::json!({
        "data": rows,
        "meta": { "next_cursor": next.encode(), "has_more": has_more },
    })
}
