//! `/deliveries`: attempts, polled by cursor; manual retry.

use app::core::{AttemptId, EndpointId, EventId};
use app::{
    core::cursor::Cursor,
    core::event_type::EventType,
    core::permissions::Action,
    core::status::{DeliveryStatus as Status, ErrorKind, Trigger},
    core::text::no_nul,
    db::deliveries,
    model::DeliveryRow,
    use_cases,
};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    Extension, Json,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::{
    error::ApiErrorBody,
    page_limit,
    paging::{check_event_id, cut_page, event_id_schema, PageMeta},
    parse_cursor, parse_id, parse_since, ApiError, ApiQuery, Caller,
};

/// One delivery attempt, as lists and retries return it. Fields without a value are
/// `null`, never left out, hence `required` on the optional ones.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Delivery {
    #[schema(value_type = i64)]
    pub id: AttemptId,
    /// `req_` + 26 characters, new for every attempt.
    pub request_id: String,
    #[schema(value_type = String)]
    pub event_id: EventId,
    #[schema(value_type = EventType, inline)]
    pub event_type: String,
    #[schema(value_type = i64)]
    pub endpoint_id: EndpointId,
    pub target_url: String,
    /// 1 for the first attempt; manual retries continue the count.
    pub attempt: i32,
    pub trigger: Trigger,
    /// Who started a manual attempt.
    #[schema(required = true)]
    pub triggered_by: Option<String>,
    pub status: Status,
    pub scheduled_at: DateTime<Utc>,
    /// When the request went out (for a throttled endpoint, its start slot); while the
    /// attempt is in flight, when a dispatcher took it.
    #[schema(required = true)]
    pub started_at: Option<DateTime<Utc>>,
    /// The attempt's time, by which lists order and `since` filters: when it was queued,
    /// or for a scheduled retry or a paced replay, when it is due.
    pub created_at: DateTime<Utc>,
    #[schema(required = true)]
    pub finished_at: Option<DateTime<Utc>>,
    #[schema(required = true)]
    pub duration_ms: Option<i32>,
    #[schema(required = true)]
    pub response_status: Option<i16>,
    #[schema(required = true)]
    pub error_kind: Option<ErrorKind>,
    #[schema(required = true)]
    pub error: Option<String>,
    /// The event's ordering key.
    #[schema(required = true)]
    pub ordering_key: Option<String>,
    /// While the attempt waits its turn behind an earlier event with the same key (to
    /// the same endpoint): that event's id.
    #[schema(required = true)]
    pub waits_for: Option<String>,
}

impl From<DeliveryRow> for Delivery {
    fn from(r: DeliveryRow) -> Delivery {
        Delivery {
            id: r.id,
            request_id: r.request_id,
            event_id: r.event_id,
            event_type: r.event_type,
            endpoint_id: r.endpoint_id,
            target_url: r.target_url,
            attempt: r.attempt,
            trigger: r.trigger,
            triggered_by: r.triggered_by,
            status: r.status,
            scheduled_at: r.scheduled_at,
            started_at: r.started_at,
            created_at: r.created_at,
            finished_at: r.finished_at,
            duration_ms: r.duration_ms,
            response_status: r.response_status,
            error_kind: r.error_kind,
            error: r.error,
            ordering_key: r.ordering_key,
            waits_for: r.waits_for,
        }
    }
}

/// One attempt with what was sent and what came back (`GET /deliveries/{id}`).
#[derive(Serialize, utoipa::ToSchema)]
pub struct DeliveryDetail {
    #[serde(flatten)]
    pub delivery: Delivery,
    /// The exact body sent.
    pub payload: String,
    /// `[name, value]` pairs as sent.
    #[schema(required = true)]
    pub request_headers: Option<Vec<(String, String)>>,
    #[schema(required = true)]
    pub response_headers: Option<Vec<(String, String)>>,
    /// The first 64 KiB of the response body.
    #[schema(required = true)]
    pub response_body: Option<String>,
}

/// A page of `GET /deliveries`, ascending by (`created_at`, `id`): an attempt's time, when
/// it is due. A scheduled retry is listed once its time has come (read it by id before).
#[derive(Serialize, utoipa::ToSchema)]
pub struct DeliveryPage {
    pub data: Vec<Delivery>,
    pub meta: PageMeta,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListDeliveries {
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[0-9]{1,16}_[0-9]{1,18}$")]
    pub cursor: Option<String>,
    #[param(minimum = 1, maximum = 200, default = 50)]
    pub limit: Option<i64>,
    /// Only attempts whose time (`created_at`, when each is due) is at or after this RFC 3339 time.
    #[param(format = DateTime)]
    pub since: Option<String>,
    #[param(value_type = Option<Status>)]
    pub status: Option<String>,
    /// Only attempts of this event.
    #[param(schema_with = event_id_schema)]
    pub event_id: Option<EventId>,
    /// Only attempts of events with this ordering key.
    #[param(min_length = 1, max_length = 255, pattern = r"^[^\u0000]+$")]
    pub ordering_key: Option<String>,
}

#[utoipa::path(get, path = "/deliveries", params(ListDeliveries), responses((status = 200, body = DeliveryPage)))]
pub async fn list(
    State(pool): State<PgPool>,
    State(cfg): State<std::sync::Arc<app::cfg::Config>>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<ListDeliveries>,
) -> Result<Json<DeliveryPage>, ApiError> {
    let limit = page_limit(q.limit)?;
    let after = parse_cursor(q.cursor.as_deref())?;
    // Nothing before the project's window is listed, whatever `since` says.
    let start = caller.window_start(&cfg);
    let since = Some(parse_since(q.since.as_deref())?.map_or(start, |s| s.max(start)));
    let status = q
        .status
        .as_deref()
        .map(|s| {
            Status::parse(s).ok_or_else(|| {
                ApiError::invalid(format!(
                    "status `{s}` is not one of pending, in_flight, succeeded, failed, dead_letter"
                ))
            })
        })
        .transpose()?;
    if let Some(id) = &q.event_id {
        check_event_id("event_id", id)?;
    }
    if let Some(k) = &q.ordering_key {
        let n = k.chars().count();
        if n == 0 || n > 255 {
            return Err(ApiError::invalid(format!(
                "ordering_key: between 1 and 255 characters, not {n}"
            )));
        }
        no_nul("ordering_key", k).map_err(ApiError::invalid)?;
    }
    let mut rows = deliveries::page(
        &pool,
        caller.project_id,
        after,
        since,
        status,
        (q.event_id.as_deref(), q.ordering_key.as_deref()),
        limit + 1,
    )
    .await?;
    let (next, has_more) = cut_page(&mut rows, limit, after, |r| Cursor {
        created_at: r.created_at,
        id: r.id.get(),
    });
    Ok(Json(DeliveryPage {
        data: rows.into_iter().map(Delivery::from).collect(),
        meta: PageMeta::new(next, has_more),
    }))
}

#[utoipa::path(
    get,
    path = "/deliveries/{id}",
    params(("id" = i64, Path, description = "Delivery attempt id")),
    responses((status = 200, body = DeliveryDetail), (status = 404, body = ApiErrorBody))
)]
pub async fn get(
    State(pool): State<PgPool>,
    State(cfg): State<std::sync::Arc<app::cfg::Config>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<DeliveryDetail>, ApiError> {
    let access = caller.access(Action::ReadDeliveries)?;
    let d = use_cases::deliveries::detail(&pool, &access, AttemptId::new(parse_id(&id)?)).await?;
    if d.row.created_at < caller.window_start(&cfg) {
        return Err(app::error::AppError::NotFound.into());
    }
    Ok(Json(DeliveryDetail {
        delivery: d.row.into(),
        payload: d.payload,
        request_headers: d.request_headers,
        response_headers: d.response_headers,
        response_body: d.response_body,
    }))
}

#[utoipa::path(
    post,
    path = "/deliveries/{id}/retry",
    params(("id" = i64, Path, description = "Delivery attempt id")),
    responses(
        (status = 202, body = Delivery, description = "The new attempt, queued"),
        (status = 404, body = ApiErrorBody),
        (status = 409, body = ApiErrorBody, description = "An attempt of the same event and endpoint is still pending or in flight"),
    )
)]
pub async fn retry(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Delivery>), ApiError> {
    let access = caller.access(Action::Retry)?;
    let row = use_cases::deliveries::retry(&pool, &access, AttemptId::new(parse_id(&id)?)).await?;
    Ok((StatusCode::ACCEPTED, Json(row.into())))
}
