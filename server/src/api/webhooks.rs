//! `/webhooks`: a project's endpoints.

use app::core::EndpointId;
use app::{
    core::permissions::Action,
    core::{
        endpoint_url::parse_endpoint_url,
        event_type::{self, parse_subscription},
    },
    db::endpoints::{self},
    model::EndpointView,
    use_cases,
};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::IntoResponse,
    Extension, Json,
};
use std::collections::BTreeMap;

use app::core::{
    custom_headers::parse_custom_headers, ed25519::HMAC_SHA256, throttle::check_rate_limit,
};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::{
    destination_schema::destination_in as destination_in_schema,
    destinations::{requested, Destination},
    error::ApiErrorBody,
    parse_id, ApiError, ApiJson, Caller,
};

/// The schema of an endpoint's `events` list; `nullable` for the optional field of a patch.
fn subscription_schema(nullable: bool) -> utoipa::openapi::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    let item = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(event_type::SUBSCRIPTION_PATTERN))
        .max_length(Some(event_type::MAX_LEN));
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

/// The custom-header rules of [`parse_custom_headers`], as a schema: a client checked
/// against the document is refused nothing the document allows.
fn custom_headers_schema() -> utoipa::openapi::Object {
    use app::core::custom_headers::{
        MAX_HEADERS, MAX_NAME, MAX_VALUE, RESERVED, RESERVED_PREFIXES,
    };
    use utoipa::openapi::{schema::Type, ObjectBuilder};
    // ECMA patterns have no case-insensitive flag: `host` becomes `[hH][oO][sS][tT]`.
    let any_case = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                } else {
                    c.to_string()
                }
            })
            .collect()
    };
    let names = RESERVED.iter().map(|n| format!("(?!{}$)", any_case(n)));
    let prefixes = RESERVED_PREFIXES
        .iter()
        .map(|p| format!("(?!{})", any_case(p)));
    let name_pattern = format!(
        "^{}[A-Za-z0-9!#$%&'*+.^_`|~-]{{1,{MAX_NAME}}}$",
        names.chain(prefixes).collect::<String>()
    );
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::Object,
            Type::Null,
        ]))
        .description(Some(
            "Custom headers sent with every attempt (for example a token the receiver expects). \
             Names Posthorn sets itself (`Content-Type`, `webhook-*`, …) are refused.",
        ))
        .max_properties(Some(MAX_HEADERS))
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(name_pattern)),
        ))
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(MAX_VALUE))
                .pattern(Some(r"^[^\u0000-\u001F\u007F]*$")),
        ))
        .build()
}

fn endpoint_url_schema(nullable: bool) -> utoipa::openapi::Object {
    use app::core::endpoint_url::{MAX_LEN, PATTERN};
    use utoipa::openapi::{schema::Type, ObjectBuilder};
    let types: &[Type] = if nullable {
        &[Type::String, Type::Null]
    } else {
        &[Type::String]
    };
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter(
            types.iter().cloned(),
        ))
        .description(Some(
            "http(s) URL: a host name or IPv4 address, an optional port, path and query; \
             no credentials, no fragment.",
        ))
        .pattern(Some(PATTERN))
        .max_length(Some(MAX_LEN))
        .examples([serde_json::json!("https://example.com/webhooks")])
        .build()
}

pub(super) fn endpoint_url() -> utoipa::openapi::Object {
    endpoint_url_schema(false)
}

fn optional_endpoint_url() -> utoipa::openapi::Object {
    endpoint_url_schema(true)
}

pub(super) fn subscription() -> utoipa::openapi::Array {
    subscription_schema(false)
}

pub(super) fn optional_subscription() -> utoipa::openapi::Array {
    subscription_schema(true)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// The endpoint's URL; or give `destination` instead.
    #[schema(schema_with = optional_endpoint_url)]
    pub url: Option<String>,
    /// A broker to publish to instead of POSTing to `url` (SPEC "Destinations").
    #[schema(schema_with = destination_in_schema)]
    pub destination: Option<serde_json::Value>,
    #[schema(schema_with = subscription)]
    pub events: Vec<String>,
    /// Up to 500 characters.
    #[schema(max_length = 500, pattern = r"^[^\u0000]*$")]
    pub description: Option<String>,
    /// Custom headers sent with every attempt (for example a token the receiver expects).
    #[schema(schema_with = custom_headers_schema)]
    pub headers: Option<BTreeMap<String, String>>,
    /// At most this many attempts per second start to the endpoint, evenly spaced
    /// (no burst); null or absent: unlimited.
    #[serde(default, deserialize_with = "whole")]
    #[schema(minimum = 1, maximum = 10000, example = 5)]
    pub rate_limit: Option<i64>,
    /// Presented to the receiver when it asks for one (mutual TLS); write-only.
    pub client_certificate: Option<ClientCertificateIn>,
    /// How deliveries are signed: `hmac-sha256` (the default, with `secret`) or `ed25519`
    /// (`v1a` signatures, verified with `public_key`; no secret).
    #[schema(value_type = Option<String>, pattern = r"^(hmac-sha256|ed25519)$")]
    pub signature_scheme: Option<String>,
    /// A CEL expression over `event`, `data` and `subjects` (e.g.
    /// `data.amount > 1000 && data.region == "eu"`): an event it does not match makes no
    /// attempt for this endpoint. At most 1024 bytes; checked when saved (422 with the
    /// position of what is wrong). Not blank: null (or leaving it out) means no filter.
    #[schema(max_length = 1024, pattern = r"\S")]
    pub filter: Option<String>,
}

/// A client certificate and its key, PEM (each at most 16384 characters; the certificate first,
/// then up to 4 of its chain). The key must belong to the certificate, which must not
/// have expired.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientCertificateIn {
    #[schema(schema_with = cert_schema)]
    pub cert: String,
    #[schema(schema_with = key_schema)]
    pub key: String,
}

/// A PEM text as [`app::core::client_cert::check`] first matches it.
fn pem_schema(pattern: &str, description: &str) -> utoipa::openapi::Object {
    use app::core::client_cert::MAX_PEM_CHARS;
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(pattern))
        .max_length(Some(MAX_PEM_CHARS))
        .description(Some(description))
        .build()
}

fn cert_schema() -> utoipa::openapi::Object {
    pem_schema(
        app::core::client_cert::CERT_PATTERN,
        "PEM `CERTIFICATE` blocks: the endpoint's certificate, then its chain.",
    )
}

fn key_schema() -> utoipa::openapi::Object {
    pem_schema(
        app::core::client_cert::KEY_PATTERN,
        "The certificate's key: a PEM `PRIVATE KEY` block (PKCS#8, RSA or EC), unencrypted.",
    )
}

/// What is shown of an endpoint's client certificate.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ClientCertificateOut {
    /// E.g. `CN=posthorn-client, O=Shop`.
    pub subject: String,
    pub not_after: chrono::DateTime<chrono::Utc>,
}

fn client_cert(
    c: Option<&ClientCertificateIn>,
) -> Result<Option<app::core::client_cert::ClientCert>, ApiError> {
    c.map(|c| app::core::client_cert::check(&c.cert, &c.key, chrono::Utc::now()))
        .transpose()
        .map_err(ApiError::invalid)
}

fn scheme(text: Option<&str>) -> Result<Option<&'static str>, ApiError> {
    text.map(app::core::ed25519::parse_scheme)
        .transpose()
        .map_err(ApiError::invalid)
}

/// A field that may be absent (outer `None`) or null (`Some(None)`).
fn present<'de, T: Deserialize<'de>, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhook {
    #[schema(schema_with = optional_endpoint_url)]
    pub url: Option<String>,
    #[schema(schema_with = optional_subscription)]
    pub events: Option<Vec<String>>,
    /// Up to 500 characters.
    #[schema(max_length = 500, pattern = r"^[^\u0000]*$")]
    pub description: Option<String>,
    pub enabled: Option<bool>,
    /// Replaces all custom headers.
    #[schema(schema_with = custom_headers_schema)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Attempts per second; null lifts the limit, absent leaves it unchanged.
    #[serde(default, deserialize_with = "present_whole")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 10000)]
    pub rate_limit: Option<Option<i64>>,
    /// A new client certificate; null removes it, absent leaves it as it is.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<ClientCertificateIn>)]
    pub client_certificate: Option<Option<ClientCertificateIn>>,
    /// Switch schemes: both sign for 24 hours after. To `hmac-sha256`: the answer carries
    /// the new `secret`, once.
    #[schema(value_type = Option<String>, pattern = r"^(hmac-sha256|ed25519)$")]
    pub signature_scheme: Option<String>,
    /// A new filter (CEL, at most 1024 bytes); null removes it, absent leaves it as it is.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 1024, pattern = r"\S")]
    pub filter: Option<Option<String>>,
    /// New settings of the endpoint's broker, of the same type (the type never changes);
    /// credentials left out are kept.
    #[schema(schema_with = destination_in_schema)]
    pub destination: Option<serde_json::Value>,
}

/// JSON's integers include `5.0`, as JSON Schema's `integer` does; `5.5` is refused.
pub(crate) fn whole<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Option::<serde_json::Number>::deserialize(d)?
        .map(|n| whole_number(&n))
        .transpose()
}

/// [`whole`] for a number already read.
pub(crate) fn whole_number<E: serde::de::Error>(n: &serde_json::Number) -> Result<i64, E> {
    n.as_i64()
        .or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        })
        .ok_or_else(|| E::custom(format!("`{n}` is not a whole number")))
}

/// A whole number that may be absent (outer `None`) or null (`Some(None)`).
fn present_whole<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<i64>>, D::Error> {
    whole(d).map(Some)
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Webhook {
    #[schema(value_type = i64)]
    pub id: EndpointId,
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
    /// The client certificate presented to the receiver (null: none).
    #[schema(required = true)]
    pub client_certificate: Option<ClientCertificateOut>,
    /// `hmac-sha256` or `ed25519`.
    #[schema(pattern = r"^(hmac-sha256|ed25519)$")]
    pub signature_scheme: String,
    /// `whpk_<base64 of the 32-byte ed25519 public key>`, once the endpoint has one.
    #[schema(required = true, pattern = r"^whpk_[A-Za-z0-9+/]+={0,2}$")]
    pub public_key: Option<String>,
    /// The CEL filter events must match to be sent here (null: every event of `events`).
    #[schema(required = true)]
    pub filter: Option<String>,
    /// `whsec_…`; only in the answers to create and rotate-secret (HMAC endpoints) and to a
    /// PATCH that switches to `hmac-sha256`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false, pattern = r"^whsec_[A-Za-z0-9+/]+={0,2}$")]
    pub secret: Option<String>,
    /// Only for an endpoint that is no plain URL: a broker it publishes to, or a
    /// `posthorn listen` session's.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Destination, required = false)]
    pub destination: Option<Destination>,
}

impl Webhook {
    pub(super) fn from_view(e: EndpointView, secret: Option<String>) -> Webhook {
        let destination = Destination::of(&e);
        Webhook {
            destination,
            id: e.id,
            url: e.url,
            events: e.event_types,
            description: e.description,
            enabled: e.enabled,
            created_at: e.created_at,
            headers: e.header_names,
            rate_limit: e.rate_limit,
            signature_scheme: e.signature_scheme,
            public_key: e.public_key,
            filter: e.filter,
            client_certificate: e
                .client_cert_subject
                .zip(e.client_cert_not_after)
                .map(|(subject, not_after)| ClientCertificateOut { subject, not_after }),
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
    let (url, destination) = requested(body.url.as_deref(), body.destination.as_ref())?;
    let url = match url {
        Some(url) => parse_endpoint_url(&url)
            .map_err(ApiError::invalid)?
            .to_string(),
        None => String::new(),
    };
    let events = parse_subscription(&body.events).map_err(ApiError::invalid)?;
    let headers = custom_headers(body.headers.as_ref())?;
    let rate_limit = body
        .rate_limit
        .map(check_rate_limit)
        .transpose()
        .map_err(ApiError::invalid)?;
    let client_cert = client_cert(body.client_certificate.as_ref())?;
    let signature_scheme = scheme(body.signature_scheme.as_deref())?;
    let access = caller.access(Action::CreateEndpoint)?;
    let (ep, secret) = use_cases::endpoints::create(
        &pool,
        &access,
        use_cases::endpoints::NewEndpoint {
            url,
            destination,
            event_types: events,
            description: body.description.unwrap_or_default(),
            headers,
            rate_limit,
            client_cert,
            signature_scheme,
            filter: body.filter,
        },
    )
    .await?;
    // An ed25519 endpoint has no secret to show.
    let secret = (ep.signature_scheme == HMAC_SHA256).then_some(secret);
    Ok((StatusCode::CREATED, Json(Webhook::from_view(ep, secret))))
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
    let ep = endpoints::get(&pool, &access, EndpointId::new(parse_id(&id)?)).await?;
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
    let (url, destination) = match (body.url.as_deref(), body.destination.as_ref()) {
        (None, None) => (None, None),
        (url, d) => requested(url, d)?,
    };
    let url = url
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
    let client_cert = body
        .client_certificate
        .map(|c| client_cert(c.as_ref()))
        .transpose()?;
    let signature_scheme = scheme(body.signature_scheme.as_deref())?;
    let access = caller.access(Action::EditEndpoint)?;
    let (ep, secret) = use_cases::endpoints::change(
        &pool,
        &access,
        EndpointId::new(id),
        use_cases::endpoints::EndpointChange {
            url: url.map(|u| u.to_string()),
            event_types: events,
            description: body.description,
            enabled: body.enabled,
            headers,
            rate_limit,
            client_cert,
            signature_scheme,
            filter: body.filter,
            destination,
        },
    )
    .await?;
    Ok(Json(Webhook::from_view(ep, secret)))
}

#[utoipa::path(delete, path = "/webhooks/{id}", params(("id" = i64, Path, description = "Endpoint id")), responses((status = 204), (status = 404, body = ApiErrorBody)))]
pub async fn delete(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let access = caller.access(Action::DeleteEndpoint)?;
    use_cases::endpoints::delete(&pool, &access, EndpointId::new(parse_id(&id)?)).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/webhooks/{id}/rotate-secret", params(("id" = i64, Path, description = "Endpoint id")), responses((status = 200, body = Webhook), (status = 404, body = ApiErrorBody), (status = 409, body = ApiErrorBody, description = "An ed25519 endpoint has no secret")))]
pub async fn rotate(
    State(pool): State<PgPool>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Webhook>, ApiError> {
    let id = parse_id(&id)?;
    let access = caller.access(Action::RotateSecret)?;
    let secret = use_cases::endpoints::rotate_secret(&pool, &access, EndpointId::new(id)).await?;
    let ep = endpoints::get(&pool, &access, EndpointId::new(id)).await?;
    Ok(Json(Webhook::from_view(ep, Some(secret))))
}
