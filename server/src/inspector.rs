//! The inspector's HTTP side: make bins, capture anything sent to `/r/{id}…`, list
//! captures as JSON. No login, and nothing here touches project tables.

use std::net::SocketAddr;

use app::{
    core::ratelimit::window_start,
    db::{bins, rate_counters},
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
    api::ApiError,
    web::{AppState, SESSION_COOKIE},
};

/// Bodies above this are refused (413) and the refusal is still listed.
pub const MAX_CAPTURE: usize = 1024 * 1024;

pub fn router(_state: AppState) -> Router<AppState> {
    Router::new()
        .route("/inspector/bins", post(create))
        .route("/inspector/bins/{id}/requests", get(requests))
        .route("/r/{id}", any(capture))
        .route("/r/{id}/{*rest}", any(capture))
}

async fn create(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
) -> Result<Response, ApiError> {
    let now = chrono::Utc::now().timestamp();
    let n = rate_counters::hit(
        &state.pool,
        &format!("bin-create:{}", addr.ip()),
        window_start(now),
    )
    .await?;
    if n > app::inspector::BIN_CREATIONS_PER_MINUTE {
        let mut r = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many new bins from this address",
        )
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, (60 - now.rem_euclid(60)).into());
        return Ok(r);
    }
    let (id, expires_at) =
        bins::create(&state.pool, state.cfg.bin_ttl, Some(&addr.ip().to_string())).await?;
    let body =
        serde_json::json!({ "id": id, "url": state.cfg.bin_url(&id), "expires_at": expires_at });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

async fn requests(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if bins::live(&state.pool, &id).await?.is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such bin, or it has expired",
        ));
    }
    let list = bins::requests(&state.pool, &id, None).await?;
    let data: Vec<serde_json::Value> = list
        .into_iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id, "method": r.method, "path": r.path, "query": r.query, "headers": r.headers,
                "body_base64": STANDARD.encode(&r.body), "size": r.size, "status": r.status,
                "remote_addr": r.remote_addr, "received_at": r.received_at,
            })
        })
        .collect();
    Ok(Json(serde_json::json!({ "data": data })).into_response())
}

/// Removes Posthorn's own session cookie from a Cookie header; `None` when nothing is left.
fn without_session_cookie(value: &str) -> Option<String> {
    let kept: Vec<&str> = value
        .split(';')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.starts_with(&format!("{SESSION_COOKIE}=")))
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
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such bin, or it has expired",
        ));
    }
    let now = chrono::Utc::now().timestamp();
    if rate_counters::hit(
        &state.pool,
        &format!("capture:{}", addr.ip()),
        window_start(now),
    )
    .await?
        > state.cfg.capture_per_minute
    {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many requests from this address",
        ));
    }
    let (parts, body) = req.into_parts();
    let mut headers: Vec<(String, String)> = Vec::with_capacity(parts.headers.len());
    for (name, value) in parts.headers.iter() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if name == header::COOKIE {
            if let Some(v) = without_session_cookie(&value) {
                headers.push((name.to_string(), v));
            }
            continue;
        }
        headers.push((name.to_string(), value));
    }
    let declared: Option<i64> = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let (body, size, status) = match axum::body::to_bytes(Body::new(body), MAX_CAPTURE).await {
        Ok(bytes) => {
            let size = bytes.len() as i64;
            (bytes.to_vec(), size, StatusCode::OK)
        }
        Err(_) => (
            Vec::new(),
            declared.unwrap_or(MAX_CAPTURE as i64 + 1),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
    };
    let remote = addr.to_string();
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
        },
    )
    .await?;
    if !stored {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such bin, or it has expired",
        ));
    }
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return Err(ApiError::new(
            status,
            "too_large",
            "bodies over 1 MiB are not captured",
        ));
    }
    Ok((StatusCode::OK, Json(serde_json::json!({ "ok": true }))).into_response())
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
