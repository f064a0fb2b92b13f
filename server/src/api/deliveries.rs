//! `/deliveries`: attempts, polled by cursor; manual retry.

use app::{core::cursor::Cursor, core::permissions::Action, db::deliveries};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::IntoResponse,
    Extension, Json,
};
use serde::Deserialize;
use sqlx::PgPool;

use super::{
    events::{cut_page, page_json},
    page_limit, parse_cursor, parse_since,
    webhooks::parse_id,
    ApiError, ApiQuery, Caller,
};

#[derive(Deserialize, utoipa::IntoParams)]
pub struct ListDeliveries {
    pub cursor: Option<String>,
    pub limit: Option<i64>,
    pub since: Option<String>,
    pub status: Option<String>,
    pub event_id: Option<String>,
}

#[utoipa::path(get, path = "/deliveries", params(ListDeliveries), responses((status = 200)))]
pub async fn list(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<ListDeliveries>,
) -> Result<impl IntoResponse, ApiError> {
    let limit = page_limit(q.limit)?;
    let after = parse_cursor(q.cursor.as_deref())?;
    let since = parse_since(q.since.as_deref())?;
    if let Some(s) = q.status.as_deref() {
        if app::core::status::DeliveryStatus::parse(s).is_none() {
            return Err(ApiError::invalid(format!(
                "status `{s}` is not one of pending, in_flight, succeeded, failed, dead_letter"
            )));
        }
    }
    let mut rows = deliveries::page(
        &pool,
        caller.project_id,
        after,
        since,
        q.status.as_deref(),
        q.event_id.as_deref(),
        limit + 1,
    )
    .await?;
    let (next, has_more) = cut_page(&mut rows, limit, after, |r| Cursor {
        created_at: r.created_at,
        id: r.id,
    });
    let data: Vec<serde_json::Value> = rows.iter().map(row_json).collect();
    Ok(Json(page_json(&data, next, has_more)))
}

fn row_json(r: &app::model::DeliveryRow) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("endpoint_url");
        o.remove("project_id");
    }
    v
}

#[utoipa::path(get, path = "/deliveries/{id}", params(("id" = i64, Path, description = "Delivery attempt id")), responses((status = 200), (status = 404)))]
pub async fn get(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let access = caller.access(Action::ReadDeliveries)?;
    let row = deliveries::get_row(&pool, &access, parse_id(&id)?).await?;
    let extras = deliveries::extras(&pool, &row).await?;
    let mut v = row_json(&row);
    if let Some(o) = v.as_object_mut() {
        let payload = match (&extras.data, extras.event_created_at) {
            (Some(d), Some(at)) => String::from_utf8_lossy(&app::core::payload::build_body(
                &row.event_id,
                &row.event_type,
                at,
                d,
            ))
            .into_owned(),
            _ => String::new(),
        };
        o.insert("payload".into(), payload.into());
        o.insert(
            "request_headers".into(),
            serde_json::json!(extras.request_headers.map(|j| j.0)),
        );
        o.insert(
            "response_headers".into(),
            serde_json::json!(extras.response_headers.map(|j| j.0)),
        );
        o.insert(
            "response_body".into(),
            serde_json::json!(extras.response_body),
        );
    }
    Ok(Json(v))
}

#[utoipa::path(post, path = "/deliveries/{id}/retry", params(("id" = i64, Path, description = "Delivery attempt id")), responses((status = 202), (status = 404), (status = 409)))]
pub async fn retry(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let access = caller.access(Action::Retry)?;
    let row = deliveries::retry(&pool, &access, parse_id(&id)?).await?;
    app::db::audit::record(
        &pool,
        &access,
        "retry",
        &row.event_id,
        serde_json::json!({"delivery": id, "new_delivery": row.id, "via": "api"}),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(row_json(&row))))
}
