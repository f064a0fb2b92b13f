//! Recovery through the API: replays an endpoint's attempts still failing in a window,
//! through the dashboard's bulk replay (its throttle, its limit of concurrent replays,
//! its progress), and follows or cancels the replay.

use app::core::EndpointId;
use std::sync::Arc;

use app::{
    cfg::Config, core::permissions::Action, db::endpoints, delivery_filter::DeliveryFilter,
    model::ReplayProgress, use_cases,
};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    Extension, Json,
};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::{error::ApiErrorBody, parse_id, ApiError, ApiJson, Caller};

/// The window to recover.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Recover {
    /// RFC 3339: attempts made at or after this time. The project's history window bounds
    /// it (older attempts are not kept).
    #[schema(format = DateTime)]
    pub since: String,
    /// RFC 3339: attempts made before this time (at or before `since`: an empty window).
    /// Default: now.
    #[schema(format = DateTime)]
    #[serde(default)]
    pub until: Option<String>,
}

/// A replay and how far it has come.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Replay {
    pub id: i64,
    /// `running`, `done` or `cancelled`.
    pub status: String,
    /// The (event, endpoint) pairs it sends, one new attempt each.
    pub total: i32,
    /// Attempts queued so far.
    pub queued: i32,
    /// Of those, attempts with an outcome.
    pub finished: i32,
    /// Attempts queued per second, per endpoint.
    pub per_second: i32,
}

impl From<ReplayProgress> for Replay {
    fn from(p: ReplayProgress) -> Replay {
        Replay {
            id: p.id,
            status: p.status,
            total: p.total,
            queued: p.queued,
            finished: p.finished,
            per_second: p.per_second,
        }
    }
}

fn time(field: &str, value: &str) -> Result<chrono::DateTime<chrono::Utc>, ApiError> {
    chrono::DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|_| ApiError::invalid(format!("{field} must be an RFC 3339 time, not `{value}`")))
}

#[utoipa::path(
    post,
    path = "/webhooks/{id}/recover",
    params(("id" = i64, Path, description = "Endpoint id")),
    request_body = Recover,
    responses(
        (status = 202, body = Replay, description = "The replay of the (event, endpoint) pairs still failing in the window: failed or dead-lettered, with no success and nothing waiting. It may be empty."),
        (status = 404, body = ApiErrorBody),
    )
)]
pub async fn recover(
    State(pool): State<PgPool>,
    State(cfg): State<Arc<Config>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Recover>,
) -> Result<(StatusCode, Json<Replay>), ApiError> {
    let access = caller.access(Action::Replay)?;
    let endpoint = endpoints::get(&pool, &access, EndpointId::new(parse_id(&id)?)).await?;
    let since = time("since", &body.since)?;
    // An `until` at or before `since` is an empty window: nothing to recover, no error.
    let until = body
        .until
        .as_deref()
        .map(|u| time("until", u))
        .transpose()?;
    let filter = DeliveryFilter {
        endpoint: Some(endpoint.id),
        since: Some(since),
        until,
        unresolved: true,
        ..DeliveryFilter::default()
    };
    let progress = use_cases::replays::start(&pool, &cfg, &access, &filter).await?;
    Ok((StatusCode::ACCEPTED, Json(progress.into())))
}

#[utoipa::path(get, path = "/replays/{id}", params(("id" = i64, Path, description = "Replay id")),
    responses((status = 200, body = Replay), (status = 404, body = ApiErrorBody)))]
pub async fn get(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Replay>, ApiError> {
    let access = caller.access(Action::ReadDeliveries)?;
    let progress = use_cases::replays::progress(&pool, &access, parse_id(&id)?).await?;
    Ok(Json(progress.into()))
}

#[utoipa::path(post, path = "/replays/{id}/cancel", params(("id" = i64, Path, description = "Replay id")),
    responses((status = 200, body = Replay, description = "The replay, cancelled unless it had finished; what it queued stays queued"),
        (status = 404, body = ApiErrorBody)))]
pub async fn cancel(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Replay>, ApiError> {
    let access = caller.access(Action::Replay)?;
    let progress = use_cases::replays::cancel(&pool, &access, parse_id(&id)?).await?;
    Ok(Json(progress.into()))
}
