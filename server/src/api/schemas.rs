//! `/event-types/{type}/schema`: a JSON Schema (draft 2020-12) per event type, and the
//! check `POST /events` makes against it (see [`app::core::schema`]).

use std::sync::Arc;

use app::{
    core::{event_type::EventType, permissions::Action, schema},
    db::{audit, schemas, targets::TargetCache},
    error::AppError,
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

use super::{error::ApiErrorBody, schema_gate as gate, ApiError, Caller};

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
    params(("type" = String, Path, pattern = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$", max_length = 128, description = "Event type, e.g. `order.paid`")),
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
    let access = caller.access(Action::EditEndpoint)?;
    let t = event_type(&t)?;
    if body.len() > schema::MAX_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("a schema is at most {} bytes", schema::MAX_BYTES),
        ));
    }
    let text = std::str::from_utf8(&body).map_err(|_| ApiError::invalid("schema: not UTF-8"))?;
    let owned = text.to_string();
    gate::run(caller.project_id, move || {
        schema::compile(&owned).map(|_| ())
    })
    .await?
    .map_err(ApiError::invalid)?;
    let mut tx = pool.begin().await?;
    let (stored, created) = schemas::put(&mut tx, caller.project_id, t.as_str(), text).await?;
    audit::record(
        &mut *tx,
        &access,
        if created {
            "schema.create"
        } else {
            "schema.update"
        },
        t.as_str(),
        serde_json::json!({"version": stored.version, "bytes": text.len()}),
    )
    .await?;
    tx.commit().await?;
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
    params(("type" = String, Path, pattern = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$", max_length = 128, description = "Event type")),
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
    params(("type" = String, Path, pattern = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$", max_length = 128, description = "Event type")),
    responses((status = 204, description = "Removed: events of the type are no longer checked"), (status = 404, body = ApiErrorBody)))]
pub async fn delete(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(t): Path<String>,
) -> Result<StatusCode, ApiError> {
    let access = caller.access(Action::EditEndpoint)?;
    let t = event_type(&t)?;
    let mut tx = pool.begin().await?;
    if !schemas::delete(&mut tx, caller.project_id, t.as_str()).await? {
        return Err(AppError::NotFound.into());
    }
    audit::record(
        &mut *tx,
        &access,
        "schema.delete",
        t.as_str(),
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Refuses the first event whose `data` fails its type's schema (`at` prefixes the
/// message, `events[3].` in a batch). Items are (at, event type, data as JSON text).
/// A project without schemas costs nothing; otherwise each type's compiled schema is
/// kept for the project's version.
pub(crate) async fn conform(
    pool: &PgPool,
    cache: &Arc<TargetCache>,
    caller: &Caller,
    items: &[(String, &str, &str)],
) -> Result<(), ApiError> {
    if caller.event_schemas == 0 {
        return Ok(());
    }
    let (project, version) = (caller.project_id, caller.endpoints_version);
    let mut work = Vec::new();
    for (at, t, data) in items {
        let compiled = match cache.schemas.get(project, version, t) {
            Some(s) => s,
            None => {
                let text = schemas::get(pool, project, t).await?.map(|s| s.schema);
                let s = match text {
                    Some(text) => gate::run(project, move || schema::stored(&text)).await?,
                    None => None,
                };
                cache.schemas.put(project, version, t, s.clone());
                s
            }
        };
        if let Some(compiled) = compiled {
            work.push((at.clone(), compiled, data.to_string()));
        }
    }
    if work.is_empty() {
        return Ok(());
    }
    gate::run(project, move || check_all(&work))
        .await?
        .map_err(ApiError::invalid)
}

/// Checks each event against its schema, once their summed cost is within the budget.
fn check_all(work: &[(String, Arc<schema::Schema>, String)]) -> Result<(), String> {
    let mut parsed = Vec::with_capacity(work.len());
    let mut cost = 0u64;
    for (at, compiled, data) in work {
        let value: serde_json::Value =
            serde_json::from_str(data).map_err(|e| format!("{at}data: {e}"))?;
        cost = cost.saturating_add(compiled.cost_of(&value));
        parsed.push((at, compiled, value));
    }
    if cost > schema::CHECK_BUDGET {
        return Err(schema::too_costly(cost));
    }
    for (at, compiled, value) in parsed {
        if let Some(failure) = compiled.check_within_budget(&value) {
            return Err(format!("{at}{failure}"));
        }
    }
    Ok(())
}
