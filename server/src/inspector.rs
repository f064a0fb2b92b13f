//! The inspector's HTTP side: make bins, capture anything sent to `/r/{id}…`, list
//! captures as JSON. No login, and nothing here touches project tables.

use std::net::SocketAddr;

use app::{
    core::{
        capture_source::{
            check_dispatch_pass, storage_limits, CaptureSource, DISPATCH_PASS_HEADER,
        },
        ratelimit::window_start,
    },
    db::{bins, rate_counters, server_keys},
    error::AppError,
    model::BinRequest,
};
use axum::{
    body::Body,
    extract::{ConnectInfo, Path, Request, State},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    routing::{any, get, post},
    Json, Router,
};
use base64::{engine::general_purpose::STANDARD, Engine as _};

use crate::{
    api::error::ApiError,
    state::{AppState, PORTAL_COOKIE, SESSION_COOKIE},
};

/// Bodies above this are refused (413) and the refusal is still listed.
pub const MAX_CAPTURE: usize = 1024 * 1024;

pub fn router(_state: AppState) -> Router<AppState> {
    Router::new()
        .route("/inspector/bins", post(create))
        .route("/inspector/bins/{id}/requests", get(requests))
        .route("/inspector/bins/{id}/requests/{request_id}/body", get(body))
        .route("/r/{id}", any(capture))
        .route("/r/{id}/{*rest}", any(capture))
}

async fn create(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
) -> Result<Response, ApiError> {
    let (id, expires_at) =
        match app::use_cases::bins::create(&state.pool, &state.cfg, Some(addr.ip())).await {
            Err(AppError::TooMany(message)) => {
                return Ok(rate_limited(message, chrono::Utc::now().timestamp()));
            }
            made => made?,
        };
    let body =
        serde_json::json!({ "id": id, "url": state.cfg.bin_url(&id), "expires_at": expires_at });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `GET /inspector/bins/{id}/requests` query.
#[derive(serde::Deserialize)]
struct PageQuery {
    limit: Option<i64>,
    cursor: Option<String>,
}

/// No list response carries more than this many bytes of bodies (base64 makes them a
/// third larger, and headers may add a quarter: the whole stays under 16 MiB).
const LIST_BODY_BUDGET: i64 = 10 * 1024 * 1024;

/// Lists being built at once. A list holds up to ~16 MiB while it is encoded; however many
/// clients ask, the memory this takes stays bounded (the others wait their turn).
static LIST_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

#[derive(serde::Serialize)]
struct CaptureJson {
    id: i64,
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body_base64: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
    size: i64,
    status: i16,
    remote_addr: Option<String>,
    received_at: chrono::DateTime<chrono::Utc>,
}

impl From<BinRequest> for CaptureJson {
    fn from(r: BinRequest) -> CaptureJson {
        CaptureJson {
            body_base64: (!r.truncated).then(|| STANDARD.encode(&r.body)),
            truncated: r.truncated,
            id: r.id,
            method: r.method,
            path: r.path,
            query: r.query,
            headers: r.headers,
            size: r.size,
            status: r.status,
            remote_addr: r.remote_addr,
            received_at: r.received_at,
        }
    }
}

fn no_such_bin() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such bin, or it has expired",
    )
}

/// A bin's captures, newest first, a page at a time (`limit` ≤ 100, `cursor`).
async fn requests(
    State(state): State<AppState>,
    Path(id): Path<String>,
    query: Result<axum::extract::Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let axum::extract::Query(q) =
        query.map_err(|e| ApiError::invalid(format!("bad query: {e}")))?;
    let limit = q.limit.unwrap_or(50);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::invalid("limit must be between 1 and 100"));
    }
    let before = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(
            c.parse::<i64>()
                .map_err(|_| ApiError::invalid("bad cursor"))?,
        ),
    };
    if bins::live(&state.pool, &id).await?.is_none() {
        return Err(no_such_bin());
    }
    let _slot = LIST_SLOTS.acquire().await.map_err(|_| no_such_bin())?;
    let list = bins::page(
        &state.pool,
        &id,
        None,
        before,
        limit,
        LIST_BODY_BUDGET,
        LIST_BODY_BUDGET,
    )
    .await?;
    let data: Vec<CaptureJson> = list
        .into_iter()
        .take(limit as usize)
        .map(CaptureJson::from)
        .collect();
    // The cursor resumes after the last row sent (a page may end early on its headers'
    // budget); none once nothing older is left.
    let next_cursor = match data.last() {
        Some(last) if bins::older_exists(&state.pool, &id, last.id).await? => {
            Some(last.id.to_string())
        }
        _ => None,
    };
    let body = serde_json::to_vec(&serde_json::json!({ "data": data, "next_cursor": next_cursor }))
        .map_err(|e| ApiError::invalid(e.to_string()))?;
    drop(data);
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// One capture's body, raw, for captures whose body the list left out.
async fn body(
    State(state): State<AppState>,
    Path((id, request_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let request_id: i64 = request_id.parse().map_err(|_| no_such_bin())?;
    let bytes = bins::body(&state.pool, &id, request_id)
        .await?
        .ok_or_else(no_such_bin)?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

/// Removes Posthorn's own session cookies (dashboard and portal) from a Cookie header;
/// `None` when nothing is left.
fn without_session_cookie(value: &str) -> Option<String> {
    let kept: Vec<&str> = value
        .split(';')
        .map(str::trim)
        .filter(|c| {
            !c.is_empty()
                && !c.starts_with(&format!("{SESSION_COOKIE}="))
                && !c.starts_with(&format!("{PORTAL_COOKIE}="))
        })
        .collect();
    (!kept.is_empty()).then(|| kept.join("; "))
}

async fn capture(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    Path(params): Path<Vec<(String, String)>>,
    req: Request,
) -> Result<Response, ApiError> {
    let id = params.first().map(|(_, v)| v.clone()).unwrap_or_default();
    if bins::live(&state.pool, &id).await?.is_none() {
        return Err(no_such_bin());
    }
    let now = chrono::Utc::now().timestamp();
    let pass = header_text(&req, DISPATCH_PASS_HEADER);
    let request_id = header_text(&req, "x-request-id");
    let source = source_of(&state, &id, pass, request_id.clone(), addr, now).await?;
    // A delivery's copy is kept findable by its attempt's request id (an erasure finds
    // it so); only the dispatcher's genuine pass vouches for the id.
    let delivery_request = match source {
        CaptureSource::Project(_) => request_id,
        CaptureSource::Address(_) => None,
    };
    let (limit, whose) = match source {
        CaptureSource::Address(_) => (state.cfg.capture_per_minute, "this address"),
        CaptureSource::Project(_) => (state.cfg.project_capture_per_minute, "this project"),
    };
    if rate_counters::hit(&state.pool, &source.rate_bucket(), window_start(now)).await? > limit {
        return Ok(rate_limited(format!("too many requests from {whose}"), now));
    }
    let (parts, body) = req.into_parts();
    let headers = kept_headers(&parts.headers, &source);
    let (body, size, status) = read_body(body, &parts.headers).await;
    let remote = addr.to_string();
    let limits = storage_limits(
        &source,
        state.cfg.inspector_budget_bytes,
        state.cfg.inspector_address_share,
        state.cfg.inspector_redirect_reserve,
    );
    let stored = bins::capture(
        &state.pool,
        &id,
        bins::Captured {
            method: parts.method.as_str(),
            path: parts.uri.path(),
            query: parts.uri.query().unwrap_or(""),
            headers: &headers,
            body: &body,
            size,
            status: status.as_u16() as i16,
            remote_addr: Some(&remote),
            source: &source.usage_key(),
            request_id: delivery_request.as_deref(),
        },
        bins::Quotas {
            per_bin_bytes: state.cfg.bin_quota_bytes,
            total_bytes: limits.total,
            per_source_bytes: limits.per_source,
        },
    )
    .await?;
    refusal(stored, whose)?;
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return Err(ApiError::new(
            status,
            "too_large",
            "bodies over 1 MiB are not captured",
        ));
    }
    Ok((StatusCode::OK, Json(serde_json::json!({ "ok": true }))).into_response())
}

/// 429 with the seconds left in the current minute's window.
fn rate_limited(message: impl Into<String>, now: i64) -> Response {
    let mut r =
        ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message).into_response();
    r.headers_mut()
        .insert(header::RETRY_AFTER, (60 - now.rem_euclid(60)).into());
    r
}

/// The headers a capture keeps: all but Posthorn's own session cookies and, on a
/// delivery, the dispatcher's pass (Posthorn's, not part of the delivery).
fn kept_headers(headers: &header::HeaderMap, source: &CaptureSource) -> Vec<(String, String)> {
    let mut kept = Vec::with_capacity(headers.len());
    for (name, value) in headers.iter() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if name == header::COOKIE {
            if let Some(v) = without_session_cookie(&value) {
                kept.push((name.to_string(), v));
            }
            continue;
        }
        if name == DISPATCH_PASS_HEADER && matches!(source, CaptureSource::Project(_)) {
            continue;
        }
        kept.push((name.to_string(), value));
    }
    kept
}

/// The body, its size and the status the capture answers with: a body over
/// [`MAX_CAPTURE`] is dropped and its declared size (or just over the cap) kept, with 413.
async fn read_body(body: Body, headers: &header::HeaderMap) -> (Vec<u8>, i64, StatusCode) {
    match axum::body::to_bytes(body, MAX_CAPTURE).await {
        Ok(bytes) => (bytes.to_vec(), bytes.len() as i64, StatusCode::OK),
        Err(_) => {
            let declared: Option<i64> = headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            (
                Vec::new(),
                declared.unwrap_or(MAX_CAPTURE as i64 + 1),
                StatusCode::PAYLOAD_TOO_LARGE,
            )
        }
    }
}

/// The answer to a capture the storage did not take.
fn refusal(stored: bins::Stored, whose: &str) -> Result<(), ApiError> {
    match stored {
        bins::Stored::Yes => Ok(()),
        bins::Stored::NoSuchBin => Err(no_such_bin()),
        // Refusing is fairer than evicting: other people's bins keep what they caught.
        bins::Stored::Full => Err(ApiError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient_storage",
            "the inspector's storage is full; captures resume as bins expire",
        )),
        // Past its share one source waits for its own captures to go; others still capture.
        bins::Stored::ShareSpent => Err(ApiError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient_storage",
            format!(
                "{whose} holds its whole share of the inspector's storage; captures resume as its bins expire"
            ),
        )),
    }
}

fn header_text(req: &Request, name: &str) -> Option<String> {
    let value = req.headers().get(name)?;
    value.to_str().ok().map(str::to_string)
}

/// Whom a capture counts against: the project whose delivery it is, when it carries a
/// genuine pass from the dispatcher (see [`app::core::capture_source`]), or else the
/// address it came from. A pass that does not check out is a stranger's header.
async fn source_of(
    state: &AppState,
    bin_id: &str,
    pass: Option<String>,
    request_id: Option<String>,
    addr: SocketAddr,
    now: i64,
) -> Result<CaptureSource, ApiError> {
    if let Some(pass) = pass {
        if let Some(key) = server_keys::get(&state.pool, server_keys::DISPATCH).await? {
            let request_id = request_id.unwrap_or_default();
            if let Some(project) = check_dispatch_pass(&key, &pass, bin_id, &request_id, now) {
                return Ok(CaptureSource::Project(project.get()));
            }
        }
    }
    Ok(CaptureSource::address(addr.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_removed_and_others_kept() {
        assert_eq!(
            without_session_cookie("a=1; posthorn_session=xyz; b=2").as_deref(),
            Some("a=1; b=2")
        );
        assert_eq!(without_session_cookie("posthorn_session=xyz"), None);
    }
}
