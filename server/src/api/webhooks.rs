//! `/webhooks`: a project's endpoints.

use app::{
    core::permissions::Action,
    core::{endpoint_url::parse_endpoint_url, event_type::parse_subscription},
    db::endpoints::{self},
    model::EndpointView,
    ops,
};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::IntoResponse,
    Extension, Json,
};
use std::collections::BTreeMap;

use app::core::{custom_headers::parse_custom_headers, throttle::check_rate_limit};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::{error::ApiErrorBody, parse_id, ApiError, ApiJson, Caller};

/// What [`parse_subscription`] accepts: an event type, or `*` for every type.
const SUBSCRIPTION_PATTERN: &str = r"^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+)$";

/// The schema of an endpoint's `events` list; `nullable` for the optional field of a patch.
fn subscription_schema(nullable: bool) -> utoipa::openapi::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(SUBSCRIPTION_PATTERN))
        .max_length(Some(128));
    let array_type = if nullable {
        SchemaType::from_iter([Type::Array, Type::Null])
    } else {
        SchemaType::new(Type::Array)
    };
    ArrayBuilder::new()
        .schema_type(array_type)
        .items(item)
        .min_items(Some(1))
        .description(Some(
            "Event types (`payment.succeeded`), or `*` for every type.",
        ))
        .examples([serde_json::json!(["payment.succeeded"])])
        .build()
}

fn subscription() -> utoipa::openapi::Array {
    subscription_schema(false)
}

fn optional_subscription() -> utoipa::openapi::Array {
    subscription_schema(true)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// http(s) URL without credentials.
    #[schema(
        pattern = r"^https?://[a-z0-9]+(\.[a-z0-9]+)*(/[a-z0-9]*)*$",
        example = "https://example.com/webhooks"
    )]
    pub url: String,
    #[schema(schema_with = subscription)]
    pub events: Vec<String>,
    pub description: Option<String>,
    /// Custom headers sent with every attempt (for example a token the receiver expects).
    pub headers: Option<BTreeMap<String, String>>,
    /// At most this many attempts per second start to the endpoint, evenly spaced
    /// (no burst); null or absent: unlimited.
    #[schema(minimum = 1, maximum = 10000, example = 5)]
    pub rate_limit: Option<i64>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhook {
    #[schema(pattern = r"^https?://[a-z0-9]+(\.[a-z0-9]+)*(/[a-z0-9]*)*$")]
    pub url: Option<String>,
    #[schema(schema_with = optional_subscription)]
    pub events: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
    /// Replaces all custom headers.
    pub headers: Option<BTreeMap<String, String>>,
    /// Attempts per second; null lifts the limit, absent leaves it unchanged.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 10000)]
    pub rate_limit: Option<Option<i64>>,
}

/// A field that may be absent (outer `None`) or null (`Some(None)`).
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    #[schema(schema_with = subscription)]
    pub events: Vec<String>,
    pub description: String,
    pub enabled: bool,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Names of the custom headers (values are never returned).
    pub headers: Vec<String>,
    /// Attempts per second at most (null: unlimited).
    #[schema(required = true)]
    pub rate_limit: Option<i32>,
    /// `whsec_…`; only in the answers to create and rotate-secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false, pattern = r"^whsec_[A-Za-z0-9+/]+={0,2}$")]
    pub secret: Option<String>,
}

impl Webhook {
    fn from_view(e: EndpointView, secret: Option<String>) -> Webhook {
        Webhook {
            id: e.id,
            url: e.url,
            events: e.event_types,
            description: e.description,
            enabled: e.enabled,
            created_at: e.created_at,
            headers: e.header_names,
            rate_limit: e.rate_limit,
            secret,
        }
    }
}

#[utoipa::path(post, path = "/webhooks", request_body = CreateWebhook, responses((status = 201, body = Webhook)))]
pub async fn create(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<CreateWebhook>,
) -> Result<impl IntoResponse, ApiError> {
    let url = parse_endpoint_url(&body.url).map_err(ApiError::invalid)?;
    let events = parse_subscription(&body.events).map_err(ApiError::invalid)?;
    let headers = custom_headers(body.headers.as_ref())?;
    let rate_limit = body
        .rate_limit
        .map(check_rate_limit)
        .transpose()
        .map_err(ApiError::invalid)?;
    let access = caller.access(Action::CreateEndpoint)?;
    let (ep, secret) = ops::endpoints::create(
        &pool,
        &access,
        ops::endpoints::NewEndpoint {
            url: url.to_string(),
            event_types: events,
            description: body.description.unwrap_or_default(),
            headers,
            rate_limit,
        },
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(Webhook::from_view(ep, Some(secret))),
    ))
}

fn custom_headers(
    map: Option<&BTreeMap<String, String>>,
) -> Result<Option<Vec<(String, String)>>, ApiError> {
    map.map(|m| {
        let pairs: Vec<(String, String)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        parse_custom_headers(&pairs).map_err(|e| ApiError::invalid(format!("headers: {e}")))
    })
    .transpose()
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct WebhookList {
    pub data: Vec<Webhook>,
}

#[utoipa::path(get, path = "/webhooks", responses((status = 200, body = WebhookList)))]
pub async fn list(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
) -> Result<impl IntoResponse, ApiError> {
    let access = caller.access(Action::ReadEndpoints)?;
    let list: Vec<Webhook> = endpoints::list(&pool, &access)
        .await?
        .into_iter()
        .map(|e| Webhook::from_view(e, None))
        .collect();
    Ok(Json(WebhookList { data: list }))
}

#[utoipa::path(get, path = "/webhooks/{id}", params(("id" = i64, Path, description = "Endpoint id")), responses((status = 200, body = Webhook), (status = 404, body = ApiErrorBody)))]
pub async fn get(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Webhook>, ApiError> {
    let access = caller.access(Action::ReadEndpoints)?;
    let ep = endpoints::get(&pool, &access, parse_id(&id)?).await?;
    Ok(Json(Webhook::from_view(ep, None)))
}

#[utoipa::path(patch, path = "/webhooks/{id}", params(("id" = i64, Path, description = "Endpoint id")), request_body = UpdateWebhook, responses((status = 200, body = Webhook), (status = 404, body = ApiErrorBody)))]
pub async fn update(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UpdateWebhook>,
) -> Result<Json<Webhook>, ApiError> {
    let id = parse_id(&id)?;
    let url = body
        .url
        .as_deref()
        .map(parse_endpoint_url)
        .transpose()
        .map_err(ApiError::invalid)?;
    let events = body
        .events
        .as_deref()
        .map(parse_subscription)
        .transpose()
        .map_err(ApiError::invalid)?;
    let headers = custom_headers(body.headers.as_ref())?;
    let rate_limit = body
        .rate_limit
        .map(|r| r.map(check_rate_limit).transpose())
        .transpose()
        .map_err(ApiError::invalid)?;
    let access = caller.access(Action::EditEndpoint)?;
    let ep = ops::endpoints::change(
        &pool,
        &access,
        id,
        ops::endpoints::EndpointChange {
            url: url.map(|u| u.to_string()),
            event_types: events,
            description: body.description,
            enabled: body.enabled,
            headers,
            rate_limit,
        },
    )
    .await?;
    Ok(Json(Webhook::from_view(ep, None)))
}

#[utoipa::path(delete, path = "/webhooks/{id}", params(("id" = i64, Path, description = "Endpoint id")), responses((status = 204), (status = 404, body = ApiErrorBody)))]
pub async fn delete(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let access = caller.access(Action::DeleteEndpoint)?;
    ops::endpoints::delete(&pool, &access, parse_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/webhooks/{id}/rotate-secret", params(("id" = i64, Path, description = "Endpoint id")), responses((status = 200, body = Webhook), (status = 404, body = ApiErrorBody)))]
pub async fn rotate(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Webhook>, ApiError> {
    let id = parse_id(&id)?;
    let access = caller.access(Action::RotateSecret)?;
    let secret = ops::endpoints::rotate_secret(&pool, &access, id).await?;
    let ep = endpoints::get(&pool, &access, id).await?;
    Ok(Json(Webhook::from_view(ep, Some(secret))))
}
