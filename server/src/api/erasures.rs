//! Erasure by data subject: `POST /erasures` starts one, `GET /erasures/{id}` follows it.
//! (`DELETE /events/{id}/data`, one event, is in [`super::events`].)

use app::core::EventId;
use app::{core::permissions::Action, use_cases};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    Extension, Json,
};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::{error::ApiErrorBody, parse_id, ApiError, ApiJson, Caller};

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateErasure {
    /// A subject as events name it in their `subjects`.
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^[^\u0000]+$",
        example = "user:42"
    )]
    pub subject: String,
}

/// An erasure and what it has erased so far.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Erasure {
    pub id: i64,
    /// `running` until every event is erased and no attempt of them is in flight, then
    /// `done`.
    #[schema(pattern = "^(running|done)$")]
    pub status: String,
    /// The subject (null for the erasure of one event).
    #[schema(required = true)]
    pub subject: Option<String>,
    /// The event (null for an erasure by subject).
    #[schema(required = true)]
    #[schema(value_type = Option<String>)]
    pub event_id: Option<EventId>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    #[schema(required = true)]
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Events whose data, subjects and attempts' responses were erased.
    pub events: i64,
    /// Attempts of those events.
    pub attempts: i64,
    /// Attempts that were still waiting, ended as dead letters with error kind `erased`.
    pub dead_lettered: i64,
    /// Redirect copies in inspector bins whose bodies were erased.
    pub inspector_copies: i64,
}

impl From<use_cases::erasures::Erasure> for Erasure {
    fn from(e: use_cases::erasures::Erasure) -> Erasure {
        Erasure {
            id: e.id,
            status: e.status,
            subject: e.subject,
            event_id: e.event_id,
            created_at: e.created_at,
            finished_at: e.finished_at,
            events: e.events,
            attempts: e.attempts,
            dead_lettered: e.dead_lettered,
            inspector_copies: e.inspector_copies,
        }
    }
}

#[utoipa::path(
    post,
    path = "/erasures",
    request_body = CreateErasure,
    responses((status = 202, body = Erasure, description = "Erasing every event of the project accepted until now that names the subject; follow it with GET /erasures/{id}"))
)]
pub async fn create(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<CreateErasure>,
) -> Result<(StatusCode, Json<Erasure>), ApiError> {
    let access = caller.access(Action::EraseData)?;
    app::core::event_input::check_subject(&body.subject)?;
    let erasure = use_cases::erasures::erase_subject(&pool, &access, &body.subject).await?;
    use_cases::erasures::start_now(&pool, erasure.id, std::time::Duration::from_secs(5));
    Ok((StatusCode::ACCEPTED, Json(erasure.into())))
}

#[utoipa::path(get, path = "/erasures/{id}", params(("id" = i64, Path, description = "Erasure id")),
    responses((status = 200, body = Erasure), (status = 404, body = ApiErrorBody)))]
pub async fn get(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Erasure>, ApiError> {
    let access = caller.access(Action::ReadDeliveries)?;
    let erasure = use_cases::erasures::get(&pool, &access, parse_id(&id)?).await?;
    Ok(Json(erasure.into()))
}
