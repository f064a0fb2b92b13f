//! `/projects`: the operator's customers, one project each.

use app::core::ProjectId;
use app::{
    core::{
        cursor::Cursor,
        limits::{Limit, Limits},
        operator::{override_of, window_days, API_REQUESTS_PER_MINUTE},
        ratelimit::Plan,
    },
    db::tenants::{self, Tenant},
    use_cases::projects::{self, BrandInput, ProjectInput},
};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::IntoResponse,
    Json,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::{
    api::{
        error::ApiErrorBody, page_limit, paging::cut_page, paging::PageMeta, parse_cursor,
        parse_id, ApiError, ApiJson, ApiQuery,
    },
    state::AppState,
};

pub use super::limits::LimitOverrides;

/// What [`check_origin`](app::core::operator::check_origin) accepts.
const ORIGIN_PATTERN: &str = r"^([hH][tT][tT][pP][sS]://[A-Za-z0-9][A-Za-z0-9.-]*|[hH][tT][tT][pP]://([lL][oO][cC][aA][lL][hH][oO][sS][tT]|127\.0\.0\.1))(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";

fn origins_schema() -> utoipa::openapi::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(ORIGIN_PATTERN))
                .max_length(Some(app::core::operator::MAX_ORIGIN_LEN)),
        )
        .max_items(Some(app::core::operator::MAX_FRAME_ANCESTORS))
        .description(Some(
            "Origins that may frame the portal: `https://host[:port]`, or `http://` for \
             localhost and 127.0.0.1.",
        ))
        .examples([serde_json::json!(["https://app.example.com"])])
        .build()
}

/// The endpoint URL grammar, https only.
fn logo_url_schema() -> utoipa::openapi::Object {
    use app::core::endpoint_url::{MAX_LEN, PATTERN};
    use utoipa::openapi::{schema::Type, ObjectBuilder};
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::String,
            Type::Null,
        ]))
        .description(Some("An https image the portal shows in its header."))
        .pattern(Some(PATTERN.replacen("^https?://", "^https://", 1)))
        .max_length(Some(MAX_LEN))
        .examples([serde_json::json!("https://cdn.example.com/logo.png")])
        .build()
}

/// Every limit's value for this project: the default, the plan's or the override.
#[derive(Serialize, ToSchema)]
pub struct EffectiveLimits {
    pub endpoints: u32,
    pub api_keys: u32,
    pub members: u32,
    pub event_types_per_endpoint: u32,
    pub concurrent_replays: u32,
    pub data_depth: u32,
    pub concurrent_erasures: u32,
    pub api_requests_per_minute: u32,
    pub retention_days: u32,
}

#[derive(Deserialize, Serialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct BrandIn {
    /// The name the portal shows instead of the project's.
    #[schema(
        max_length = 100,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: Option<String>,
    /// The portal's accent colour.
    #[schema(pattern = r"^#[0-9a-fA-F]{6}$", example = "#4f46e5")]
    pub accent: Option<String>,
    /// An https image the portal shows in its header.
    #[schema(schema_with = logo_url_schema)]
    pub logo_url: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct BrandOut {
    pub name: Option<String>,
    pub accent: Option<String>,
    pub logo_url: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Project {
    #[schema(value_type = i64)]
    pub id: ProjectId,
    /// The operator's own id for this customer.
    pub uid: Option<String>,
    pub name: String,
    #[schema(pattern = "^(trial|business)$")]
    pub plan: String,
    pub limits: EffectiveLimits,
    /// Origins that may frame this project's portal pages.
    pub frame_ancestors: Vec<String>,
    pub brand: BrandOut,
    /// Attempts carry W3C `traceparent`/`tracestate` to the project's receivers.
    pub trace_propagation: bool,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProject {
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: String,
    /// The operator's own id for this customer: unique among live projects.
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub uid: Option<String>,
    #[schema(pattern = "^(trial|business)$")]
    pub plan: Option<String>,
    pub limits: Option<LimitOverrides>,
    #[schema(schema_with = origins_schema)]
    pub frame_ancestors: Option<Vec<String>>,
    pub brand: Option<BrandIn>,
    /// Pass W3C trace context on to the project's receivers (default true).
    pub trace_propagation: Option<bool>,
}

/// Any subset of a project's fields; `limits` replaces the overrides whole.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProject {
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub uid: Option<String>,
    #[schema(pattern = "^(trial|business)$")]
    pub plan: Option<String>,
    pub limits: Option<LimitOverrides>,
    #[schema(schema_with = origins_schema)]
    pub frame_ancestors: Option<Vec<String>>,
    pub brand: Option<BrandIn>,
    /// Pass W3C trace context on to the project's receivers (default true).
    pub trace_propagation: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct ProjectList {
    pub data: Vec<Project>,
    #[serde(flatten)]
    pub page: PageMeta,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// 1 to 200, default 50.
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<i64>,
    #[param(pattern = r"^[0-9]{1,16}_[0-9]{1,18}$")]
    pub cursor: Option<String>,
    /// The operator's id: the one project that carries it, if any.
    #[param(max_length = 255)]
    pub uid: Option<String>,
}

impl Project {
    pub fn from_tenant(t: Tenant, state: &AppState) -> Project {
        let limits = Limits::from_overrides(&t.overrides);
        let plan = Plan::parse(&t.plan).unwrap_or(Plan::Trial);
        let max_retention = state.cfg.retention_days;
        Project {
            id: t.id,
            uid: t.uid,
            name: t.name,
            limits: EffectiveLimits {
                endpoints: limits.get(Limit::Endpoints),
                api_keys: limits.get(Limit::ApiKeys),
                members: limits.get(Limit::Members),
                event_types_per_endpoint: limits.get(Limit::EventTypesPerEndpoint),
                concurrent_replays: limits.get(Limit::ConcurrentReplays),
                data_depth: limits.get(Limit::DataDepth),
                concurrent_erasures: limits.get(Limit::ConcurrentErasures),
                api_requests_per_minute: override_of(&t.overrides, API_REQUESTS_PER_MINUTE)
                    .unwrap_or_else(|| state.cfg.plan_limits.per_minute(plan)),
                retention_days: window_days(&t.overrides, max_retention),
            },
            plan: t.plan,
            frame_ancestors: t.frame_ancestors,
            brand: BrandOut {
                name: t.brand.name,
                accent: t.brand.accent,
                logo_url: t.brand.logo_url,
            },
            trace_propagation: t.trace_propagation,
            created_at: t.created_at,
        }
    }
}

/// The request's fields as the use case takes them.
fn input(
    name: Option<String>,
    uid: Option<String>,
    plan: Option<String>,
    limits: Option<LimitOverrides>,
    frame_ancestors: Option<Vec<String>>,
    brand: Option<BrandIn>,
    trace_propagation: Option<bool>,
) -> ProjectInput {
    ProjectInput {
        trace_propagation,
        name,
        uid,
        plan,
        limits: limits.map(|l| serde_json::to_value(l).unwrap_or_default()),
        frame_ancestors,
        brand: brand.map(|b| BrandInput {
            name: b.name,
            accent: b.accent,
            logo_url: b.logo_url,
        }),
    }
}

#[utoipa::path(post, path = "/projects", request_body = CreateProject,
    responses((status = 201, body = Project), (status = 409, body = ApiErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CreateProject>,
) -> Result<impl IntoResponse, ApiError> {
    let f = input(
        Some(body.name),
        body.uid,
        body.plan,
        body.limits,
        body.frame_ancestors,
        body.brand,
        body.trace_propagation,
    );
    let t = projects::create(&state.pool, f).await?;
    Ok((StatusCode::CREATED, Json(Project::from_tenant(t, &state))))
}

#[utoipa::path(get, path = "/projects", params(ListQuery), responses((status = 200, body = ProjectList)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<ProjectList>, ApiError> {
    let limit = page_limit(q.limit)?;
    let after = parse_cursor(q.cursor.as_deref())?;
    if q.uid.as_ref().is_some_and(|u| u.chars().count() > 255) {
        return Err(ApiError::invalid("uid: at most 255 characters"));
    }
    // A uid with a control character (NUL among them, which PostgreSQL cannot even
    // compare) was never stored: nothing carries it.
    let mut rows = if q
        .uid
        .as_ref()
        .is_some_and(|u| u.chars().any(char::is_control))
    {
        Vec::new()
    } else {
        tenants::list(&state.pool, q.uid.as_deref(), after, limit + 1).await?
    };
    let (next, has_more) = cut_page(&mut rows, limit, after, |t| Cursor {
        created_at: t.created_at,
        id: t.id.get(),
    });
    Ok(Json(ProjectList {
        data: rows
            .into_iter()
            .map(|t| Project::from_tenant(t, &state))
            .collect(),
        page: PageMeta::new(next, has_more),
    }))
}

#[utoipa::path(get, path = "/projects/{id}", params(("id" = i64, Path, description = "Project id")),
    responses((status = 200, body = Project), (status = 404, body = ApiErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Project>, ApiError> {
    let t = tenants::get(&state.pool, ProjectId::new(parse_id(&id)?)).await?;
    Ok(Json(Project::from_tenant(t, &state)))
}

#[utoipa::path(patch, path = "/projects/{id}", params(("id" = i64, Path, description = "Project id")),
    request_body = UpdateProject,
    responses((status = 200, body = Project), (status = 404, body = ApiErrorBody), (status = 409, body = ApiErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UpdateProject>,
) -> Result<Json<Project>, ApiError> {
    let id = parse_id(&id)?;
    let f = input(
        body.name,
        body.uid,
        body.plan,
        body.limits,
        body.frame_ancestors,
        body.brand,
        body.trace_propagation,
    );
    let t = projects::update(&state.pool, ProjectId::new(id), f).await?;
    Ok(Json(Project::from_tenant(t, &state)))
}

/// The project is gone at once: its id answers 404, its keys and sessions stop working,
/// nothing more is sent for it. Its data is purged in the background.
#[utoipa::path(delete, path = "/projects/{id}", params(("id" = i64, Path, description = "Project id")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ApiErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    projects::delete(&state.pool, ProjectId::new(parse_id(&id)?)).await?;
    Ok(StatusCode::NO_CONTENT)
}
