//! A project's keys, usage and portal links, as the operator hands them out.

use app::core::ProjectId;
use app::{
    core::operator::check_text,
    db::{tenants, usage},
    use_cases,
};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::IntoResponse,
    Extension, Json,
};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::Operator;
use crate::{
    api::{error::ApiErrorBody, parse_id, webhooks::whole, ApiError, ApiJson, ApiQuery},
    state::AppState,
};

/// Usage is read over at most this many days at once.
const MAX_USAGE_DAYS: i64 = 400;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    /// Up to 100 characters.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct CreatedKey {
    pub id: i64,
    pub name: String,
    /// The key's first characters, as the dashboard shows it.
    pub prefix: String,
    /// The key itself: shown this once, stored hashed.
    pub key: String,
    pub created_at: DateTime<Utc>,
}

/// Mints a public API key for the project (audited in the project's log too).
#[utoipa::path(post, path = "/projects/{id}/api-keys", params(("id" = i64, Path, description = "Project id")),
    request_body = CreateKey,
    responses((status = 201, body = CreatedKey), (status = 404, body = ApiErrorBody)))]
pub async fn create_key(
    State(state): State<AppState>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CreateKey>,
) -> Result<impl IntoResponse, ApiError> {
    let project = tenants::get(&state.pool, ProjectId::new(parse_id(&id)?)).await?;
    let name = check_text("name", &body.name, 100).map_err(ApiError::invalid)?;
    let (key, view) =
        use_cases::keys::create_with_view(&state.pool, &op.access(project.id), &name).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedKey {
            id: view.id,
            name: view.name,
            prefix: view.prefix,
            key,
            created_at: view.created_at,
        }),
    ))
}

#[utoipa::path(delete, path = "/projects/{id}/api-keys/{key_id}",
    params(("id" = i64, Path, description = "Project id"), ("key_id" = i64, Path, description = "Key id")),
    responses((status = 204, description = "Revoked"), (status = 404, body = ApiErrorBody)))]
pub async fn revoke_key(
    State(state): State<AppState>,
    Extension(op): Extension<Operator>,
    Path((id, key_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let project = tenants::get(&state.pool, ProjectId::new(parse_id(&id)?)).await?;
    use_cases::keys::revoke(&state.pool, &op.access(project.id), parse_id(&key_id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// The first UTC day counted; default: 29 days before `until`. At most 400 days
    /// are counted: an earlier `since` is moved up to the 400th day before `until`.
    #[param(value_type = Option<String>, format = Date, example = "2026-11-01")]
    pub since: Option<String>,
    /// The last UTC day counted, included; default: today. Before `since`: no days.
    #[param(value_type = Option<String>, format = Date, example = "2026-11-30")]
    pub until: Option<String>,
}

#[derive(Serialize, ToSchema, Default)]
pub struct AttemptCounts {
    pub succeeded: i64,
    pub failed: i64,
    pub dead_letter: i64,
}

#[derive(Serialize, ToSchema)]
pub struct UsageDay {
    #[schema(value_type = String, format = Date)]
    pub day: NaiveDate,
    pub events: i64,
    pub attempts: AttemptCounts,
}

#[derive(Serialize, ToSchema)]
pub struct Usage {
    #[schema(value_type = i64)]
    pub project_id: ProjectId,
    #[schema(value_type = String, format = Date)]
    pub since: NaiveDate,
    #[schema(value_type = String, format = Date)]
    pub until: NaiveDate,
    /// Events accepted in the window.
    pub events: i64,
    /// Attempts finished in the window, by how they ended.
    pub attempts: AttemptCounts,
    /// The days that saw any use, oldest first.
    pub days: Vec<UsageDay>,
}

/// A day given as `YYYY-MM-DD`.
fn parse_day(field: &str, text: &str) -> Result<NaiveDate, ApiError> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .filter(|_| text.len() == 10)
        .ok_or_else(|| ApiError::invalid(format!("{field}: a date (YYYY-MM-DD), not `{text}`")))
}

/// What the project used, per UTC day: for the operator's billing. Counted apart from
/// the delivery log, so retention does not erase it.
#[utoipa::path(get, path = "/projects/{id}/usage", params(("id" = i64, Path, description = "Project id"), UsageQuery),
    responses((status = 200, body = Usage), (status = 404, body = ApiErrorBody)))]
pub async fn usage(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<UsageQuery>,
) -> Result<Json<Usage>, ApiError> {
    let project = tenants::get(&state.pool, ProjectId::new(parse_id(&id)?)).await?;
    let until = match &q.until {
        Some(t) => parse_day("until", t)?,
        None => Utc::now().date_naive(),
    };
    let back = |days: i64| {
        until
            .checked_sub_signed(Duration::days(days))
            .unwrap_or(NaiveDate::MIN)
    };
    let since = match &q.since {
        Some(t) => parse_day("since", t)?,
        None => back(29),
    }
    .max(back(MAX_USAGE_DAYS - 1));
    let days = usage::between(&state.pool, project.id, since, until).await?;
    let mut total = AttemptCounts::default();
    let mut events = 0;
    let days: Vec<UsageDay> = days
        .into_iter()
        .map(|d| {
            events += d.events;
            total.succeeded += d.succeeded;
            total.failed += d.failed;
            total.dead_letter += d.dead_letter;
            UsageDay {
                day: d.day,
                events: d.events,
                attempts: AttemptCounts {
                    succeeded: d.succeeded,
                    failed: d.failed,
                    dead_letter: d.dead_letter,
                },
            }
        })
        .collect();
    Ok(Json(Usage {
        project_id: project.id,
        since,
        until,
        events,
        attempts: total,
        days,
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PortalUserIn {
    /// The operator's own id for the user; the audit log names them `portal:<id>`.
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub id: String,
    #[schema(
        min_length = 1,
        max_length = 320,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub email: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePortalLink {
    pub user: PortalUserIn,
    /// `owner` and `member` manage endpoints and deliveries; `viewer` only reads.
    #[schema(pattern = "^(owner|member|viewer)$")]
    pub role: String,
    /// Seconds until the link expires: 1 to 3600, default 300.
    #[serde(default, deserialize_with = "whole")]
    #[schema(minimum = 1, maximum = 3600)]
    pub expires_in: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct PortalLink {
    /// Single-use: opening it signs the browser into this project's portal.
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

/// A single-use sign-in link into the project's portal for one of the operator's users.
#[utoipa::path(post, path = "/projects/{id}/portal-links", params(("id" = i64, Path, description = "Project id")),
    request_body = CreatePortalLink,
    responses((status = 201, body = PortalLink), (status = 404, body = ApiErrorBody)))]
pub async fn portal_link(
    State(state): State<AppState>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CreatePortalLink>,
) -> Result<impl IntoResponse, ApiError> {
    let access = op.access(ProjectId::new(parse_id(&id)?));
    let input = use_cases::projects::PortalLinkInput {
        user_id: body.user.id,
        email: body.user.email,
        name: body.user.name,
        role: body.role,
        expires_in: body.expires_in,
    };
    let (token, expires_at) =
        use_cases::projects::portal_link(&state.pool, &access, input, &op.actor()).await?;
    Ok((
        StatusCode::CREATED,
        Json(PortalLink {
            url: format!("{}/portal/{token}", state.cfg.public_url),
            expires_at,
        }),
    ))
}
