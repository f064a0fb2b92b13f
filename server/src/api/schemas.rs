//! `/event-types/{type}/schema`: a JSON Schema (draft 2020-12) per event type, set and
//! removed through [`app::use_cases::schemas`], which also holds the check ingest makes.

use app::{
    core::{event_type::EventType, permissions::Action, schema},
    db::schemas,
    error::AppError,
    use_cases,
};
use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    Extension, Json,
};
use serde::Serialize;
use sqlx::PgPool;

use super::{error::ApiErrorBody, ApiError, Caller};

/// A schema as set.
#[derive(Serialize, utoipa::ToSchema)]
pub struct EventTypeSchema {
    pub event: String,
    /// 1 when first set, one more at every change.
    pub version: i32,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    /// The schema as sent.
    #[schema(value_type = Object)]
    pub schema: Box<serde_json::value::RawValue>,
}

fn event_type(text: &str) -> Result<EventType, ApiError> {
    EventType::parse(text).map_err(|m| ApiError::invalid(format!("event type: {m}")))
}

#[utoipa::path(put, path = "/event-types/{type}/schema",
    params(("type" = inline(EventType), Path, description = "Event type, e.g. `order.paid`")),
    request_body(content = Object, description = "A JSON Schema, draft 2020-12: at most 64 KiB, `$ref` only within it (`#…`); `format` is asserted (email, uri, date-time, uuid…); patterns run in linear time (no backreferences or lookaround)"),
    responses((status = 200, body = EventTypeSchema, description = "Replaced"), (status = 201, body = EventTypeSchema, description = "Set"),
        (status = 413, body = ApiErrorBody), (status = 422, body = ApiErrorBody, description = "Not a schema this server accepts, or 200 already set"),
        (status = 503, body = ApiErrorBody, description = "`busy`: the project's schema work is busy; retry shortly")))]
pub async fn put(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(t): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let access = caller.access(Action::EditSchemas)?;
    let t = event_type(&t)?;
    if body.len() > schema::MAX_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("a schema is at most {} bytes", schema::MAX_BYTES),
        ));
    }
    let text = std::str::from_utf8(&body).map_err(|_| ApiError::invalid("schema: not UTF-8"))?;
    let (stored, created) = use_cases::schemas::set(&pool, &access, &t, text).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(answer(stored)?)).into_response())
}

fn answer(s: schemas::StoredSchema) -> Result<EventTypeSchema, ApiError> {
    Ok(EventTypeSchema {
        event: s.event_type,
        version: s.version,
        updated_at: s.updated_at,
        schema: serde_json::value::RawValue::from_string(s.schema)
            .map_err(|e| ApiError::from(AppError::Invalid(e.to_string())))?,
    })
}

#[utoipa::path(get, path = "/event-types/{type}/schema",
    params(("type" = inline(EventType), Path, description = "Event type")),
    responses((status = 200, description = "The schema as set (its version in `Posthorn-Schema-Version`)", content_type = "application/json", body = Object),
        (status = 404, body = ApiErrorBody)))]
pub async fn get(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(t): Path<String>,
) -> Result<Response, ApiError> {
    caller.access(Action::ReadCatalogue)?;
    let t = event_type(&t)?;
    let s = schemas::get(&pool, caller.project_id, t.as_str())
        .await?
        .ok_or(AppError::NotFound)?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/json".to_string()),
            (
                header::HeaderName::from_static("posthorn-schema-version"),
                s.version.to_string(),
            ),
        ],
        s.schema,
    )
        .into_response())
}

#[utoipa::path(delete, path = "/event-types/{type}/schema",
    params(("type" = inline(EventType), Path, description = "Event type")),
    responses((status = 204, description = "Removed: events of the type are no longer checked"), (status = 404, body = ApiErrorBody)))]
pub async fn delete(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(t): Path<String>,
) -> Result<StatusCode, ApiError> {
    let access = caller.access(Action::EditSchemas)?;
    let t = event_type(&t)?;
    use_cases::schemas::remove(&pool, &access, &t).await?;
    Ok(StatusCode::NO_CONTENT)
}
