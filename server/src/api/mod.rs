//! The public API (`/public/v1`): API-key auth and per-minute rate limits in front of one
//! file per resource. Errors are `{"error":{"code","message"}}` everywhere.

pub mod deliveries;
pub mod destination_schema;
pub mod destinations;
pub mod erasures;
pub mod error;
pub mod events;
pub mod listen;
pub mod openapi;
pub mod paging;
pub mod replays;
pub mod schemas;
pub mod webhooks;

pub use error::ApiError;
pub use paging::{page_limit, parse_cursor, parse_id, parse_since};

use app::core::ProjectId;
use std::net::SocketAddr;

use app::{
    core::ratelimit::{address_bucket, quota, retry_after, window_start, Plan},
    db::{api_keys, rate_counters},
};
use axum::{
    body::Bytes,
    extract::{ConnectInfo, FromRequest, Request, State},
    http::{header, HeaderValue, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{delete, get, post, put},
    Router,
};
use serde::de::DeserializeOwned;

use crate::state::AppState;

/// Request bodies above this are refused with 413.
pub const MAX_BODY: usize = 256 * 1024;

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/webhooks", post(webhooks::create).get(webhooks::list))
        .route(
            "/webhooks/{id}",
            get(webhooks::get)
                .patch(webhooks::update)
                .delete(webhooks::delete),
        )
        .route("/webhooks/{id}/rotate-secret", post(webhooks::rotate))
        .route("/webhooks/{id}/recover", post(replays::recover))
        .route("/replays/{id}", get(replays::get))
        .route("/replays/{id}/cancel", post(replays::cancel))
        .route(
            "/event-types/{type}/schema",
            put(schemas::put).get(schemas::get).delete(schemas::delete),
        )
        .route("/events", post(events::create).get(events::list))
        .route("/events/batch", post(events::create_batch))
        .route("/events/{id}", get(events::get))
        .route("/events/{id}/data", delete(events::erase))
        .route("/erasures", post(erasures::create))
        .route("/erasures/{id}", get(erasures::get))
        .route("/deliveries", get(deliveries::list))
        .route("/deliveries/{id}", get(deliveries::get))
        .route("/deliveries/{id}/retry", post(deliveries::retry))
        .route("/listen", post(listen::open))
        .route("/listen/{id}/connect", get(listen::connect))
        .route("/openapi.json", get(openapi::document))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .layer(middleware::from_fn(refuse_nul_in_path))
        .layer(middleware::from_fn_with_state(
            state,
            authenticate_and_limit,
        ))
}

/// No id or name holds a NUL (PostgreSQL text cannot), so a path with one (`%00`) names
/// nothing: it is answered 404 here, after the key is checked and before any handler
/// could take it to a query. Both APIs use it.
pub async fn refuse_nul_in_path(req: Request, next: Next) -> Response {
    if req.uri().path().contains("%00") {
        return ApiError::from(app::error::AppError::NotFound).into_response();
    }
    next.run(req).await
}

/// The minute's counter this request was counted in, for handlers that cost more than one
/// unit (a batch of events: one per event).
#[derive(Clone, Debug)]
pub struct RateWindow {
    pub bucket: String,
    pub window: i64,
    pub limit: u32,
    pub count: u32,
}

/// Units a handler counted beyond the request's own, so the headers stay exact.
#[derive(Clone, Copy, Debug)]
pub struct ExtraUnits(pub u32);

/// The project a request's key belongs to.
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    pub project_id: ProjectId,
    pub key_id: i64,
    /// The project's endpoints version the key's lookup saw.
    pub endpoints_version: i64,
    /// How many event-type schemas the project had then.
    pub event_schemas: i32,
    /// The deepest `data` the project accepts (its `data_depth` limit).
    pub data_depth: u32,
    /// The operator's `retention_days` for the project, if set.
    pub retention_days: Option<u32>,
    /// The project passes W3C trace context on to its receivers.
    pub trace_propagation: bool,
}

impl Caller {
    /// The start of the project's history window: nothing older is listed or read.
    pub fn window_start(&self, cfg: &app::cfg::Config) -> chrono::DateTime<chrono::Utc> {
        let days = app::core::operator::window_of(self.retention_days, cfg.retention_days);
        chrono::Utc::now() - chrono::Duration::days(i64::from(days))
    }

    /// The key speaks for its project; the action is still named and checked against
    /// the one permissions table, like every server function's.
    pub fn access(
        &self,
        action: app::core::permissions::Action,
    ) -> Result<app::auth::Access, ApiError> {
        let access = app::auth::system_access(self.project_id, "api");
        access.require(action)?;
        Ok(access)
    }
}

/// JSON bodies with this API's errors: 413 over the limit, 400 malformed, 422 wrong shape.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::to_bytes(req.into_body(), MAX_BODY)
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    format!("request body is over {} KiB", MAX_BODY / 1024),
                )
            })?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// Query strings with this API's errors: a value of the wrong type is a 422 JSON error
/// naming the parameter, like a bad field in a body (axum's own is plain-text 400).
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> axum::extract::FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| ApiQuery(q.0))
            .map_err(|e| ApiError::invalid(e.body_text()))
    }
}

pub fn parse_json<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed",
            "request body must be a JSON object",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de);
    match value {
        Ok(v) => {
            de.end().map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "malformed",
                    format!("malformed JSON: {e}"),
                )
            })?;
            Ok(v)
        }
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_syntax() || inner.is_eof() {
                Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "malformed",
                    format!("malformed JSON: {inner}"),
                ))
            } else if path == "." {
                Err(ApiError::invalid(inner.to_string()))
            } else {
                Err(ApiError::invalid(format!("{path}: {inner}")))
            }
        }
    }
}

/// The key of an `Authorization: Bearer …` header (the operator API reads it the same way).
pub fn bearer(req: &Request) -> Option<String> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(|k| k.trim().to_string())
}

/// Authenticates the key and counts the request against its minute; every response,
/// errors included, carries the rate-limit headers.
async fn authenticate_and_limit(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    let now = chrono::Utc::now().timestamp();
    let bearer = bearer(&req);
    // A known key is looked up and counted in one statement; anything else counts
    // against the caller's address.
    let counted = match &bearer {
        Some(key) => {
            let counted = match &state.group {
                Some(group) => group.authenticate_counting(key, window_start(now)).await,
                None => api_keys::authenticate_counting(&state.pool, key, window_start(now)).await,
            };
            match counted {
                Ok(c) => c,
                Err(e) => return ApiError::from(e).into_response(),
            }
        }
        None => None,
    };
    let (owner, bucket, limit, count) = match counted {
        Some((o, count)) => {
            let (limit, bucket) = (
                o.per_minute
                    .unwrap_or_else(|| state.cfg.plan_limits.per_minute(o.plan)),
                api_keys::key_bucket(o.key_id),
            );
            (Some(o), bucket, limit, count)
        }
        None => {
            let bucket = format!("ip:{}", address_bucket(addr.ip()));
            let count = match rate_counters::hit(&state.pool, &bucket, window_start(now)).await {
                Ok(c) => c,
                Err(e) => return ApiError::from(e).into_response(),
            };
            (
                None,
                bucket,
                state.cfg.plan_limits.per_minute(Plan::Trial),
                count,
            )
        }
    };
    let q = quota(limit, count, now);
    let mut response = if !q.allowed {
        let wait = retry_after(&q, now);
        let mut r = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("rate limit of {limit} requests per minute reached; retry in {wait} s"),
        )
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait));
        r
    } else if req.uri().path().ends_with("/openapi.json") {
        next.run(req).await
    } else {
        match owner {
            Some(o) => {
                req.extensions_mut().insert(Caller {
                    project_id: o.project_id,
                    key_id: o.key_id,
                    endpoints_version: o.endpoints_version,
                    event_schemas: o.event_schemas,
                    data_depth: o.data_depth,
                    retention_days: o.retention_days,
                    trace_propagation: o.trace_propagation,
                });
                req.extensions_mut().insert(RateWindow {
                    bucket: bucket.clone(),
                    window: window_start(now),
                    limit,
                    count,
                });
                next.run(req).await
            }
            None => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                if bearer.is_some() {
                    "the API key is not valid"
                } else {
                    "missing Authorization: Bearer <api key>"
                },
            )
            .into_response(),
        }
    };
    let extra = response.extensions().get::<ExtraUnits>().map_or(0, |e| e.0);
    let q = if extra > 0 {
        quota(limit, count.saturating_add(extra), now)
    } else {
        q
    };
    let h = response.headers_mut();
    h.insert("x-ratelimit-limit", HeaderValue::from(q.limit));
    h.insert("x-ratelimit-remaining", HeaderValue::from(q.remaining));
    h.insert("x-ratelimit-reset", HeaderValue::from(q.reset));
    response
}
