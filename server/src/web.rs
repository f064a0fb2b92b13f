//! Assembles the HTTP surface: Leptos pages and server functions, the public API, the
//! inspector, health and metrics, sessions, the guards in front of them, and how responses
//! travel (compression, caching).

use std::net::SocketAddr;

use app::{ctx::ServerCtx, shell, App};
use axum::{
    extract::{Request, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    middleware::{self, Next},
    response::{Html, IntoResponse, Redirect, Response},
    routing::get,
    Router,
};
use leptos::prelude::*;
use leptos_axum::{generate_route_list, LeptosRoutes};
use sqlx::PgPool;
use tower_http::{
    compression::CompressionLayer, services::ServeDir, set_header::SetResponseHeaderLayer,
};
use tower_sessions::{cookie::SameSite, Expiry, Session, SessionManagerLayer};
use tower_sessions_sqlx_store::PostgresStore;

pub use crate::state::{leptos_options, AppState, SESSION_COOKIE};

pub fn session_store(pool: &PgPool) -> PostgresStore {
    PostgresStore::new(pool.clone())
}

pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let ctx = ServerCtx {
        pool: state.pool.clone(),
        cfg: state.cfg.clone(),
    };
    let sessions = SessionManagerLayer::new(session_store(&state.pool))
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(state.cfg.public_url.starts_with("https://"))
        .with_expiry(Expiry::OnInactivity(
            tower_sessions::cookie::time::Duration::days(7),
        ));

    let leptos_app = Router::new()
        .leptos_routes_with_context(&state, routes, move || provide_context(ctx.clone()), {
            let options = state.leptos_options.clone();
            move || shell(options.clone())
        })
        .route("/logout", get(logout_form).post(logout))
        .route("/portal/{token}", get(crate::portal::redeem))
        .route(
            "/developers/events/schema/{type}",
            get(crate::schema_download::download),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(middleware::from_fn_with_state(
            state.pool.clone(),
            require_login,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::portal::gate,
        ))
        .layer(middleware::from_fn(same_origin_server_fns))
        .layer(sessions);

    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .merge(crate::health::router())
        .nest_service("/pkg", assets(&state.leptos_options))
        .nest("/public/v1", crate::api::router(state.clone()))
        .nest("/operator/v1", crate::operator::router(state.clone()))
        .merge(crate::inspector::router(state.clone()))
        .merge(leptos_app)
        .layer(middleware::from_fn(security_headers))
        .layer(middleware::from_fn_with_state(
            state.metrics.clone(),
            crate::telemetry::observe_requests,
        ))
        .with_state(state)
        // Pages and answers hold tenant data: no cache keeps them, unless a route says otherwise.
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
        // Pages, server functions and API answers, compressed on the fly (server-sent events
        // and what is already compressed pass through as they are).
        .layer(CompressionLayer::new().br(true).gzip(true))
}

/// The browser bundle under `/pkg`: content-hashed names, so cached for good; the
/// build's brotli and gzip copies go to browsers that accept them.
fn assets(options: &LeptosOptions) -> Router {
    let dir = std::path::Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref());
    Router::new()
        .fallback_service(ServeDir::new(dir).precompressed_br().precompressed_gzip())
        .layer(middleware::map_response(asset_headers))
}

async fn asset_headers(mut res: Response) -> Response {
    if res.status().is_success() || res.status() == StatusCode::NOT_MODIFIED {
        let headers = res.headers_mut();
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=31536000, immutable"),
        );
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    res
}

async fn healthz(State(pool): State<PgPool>) -> impl IntoResponse {
    match sqlx::query!("SELECT 1 AS one").fetch_one(&pool).await {
        Ok(_) => (StatusCode::OK, "ok"),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "database unavailable"),
    }
}

/// Reads only what the process keeps in memory (see [`crate::metrics`]). With
/// `POSTHORN_METRICS_TOKEN` set it wants that token as a bearer, compared in constant time.
async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = &state.cfg.metrics_token {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !same_secret(given.as_bytes(), token.0.as_bytes()) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "metrics want Authorization: Bearer <POSTHORN_METRICS_TOKEN>\n",
            )
                .into_response();
        }
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// Equal secrets, compared by their digests: the time taken says nothing of where they
/// first differ, nor of the token's length.
fn same_secret(given: &[u8], token: &[u8]) -> bool {
    use sha2::{Digest, Sha256};
    let (a, b) = (Sha256::digest(given), Sha256::digest(token));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// Signing out changes state, so it is a POST (under the same-origin check); a GET of
/// /logout only offers the button. It ends the dashboard session and the portal's alike;
/// a portal user (the portal header's button) gets a page their frame may show.
async fn logout(State(pool): State<PgPool>, session: Session, headers: HeaderMap) -> Response {
    let mut res = match app::auth::sign_out(&pool, &session, &headers).await {
        Ok(out) if out.portal && !out.dashboard => return crate::portal::signed_out(),
        Ok(_) => Redirect::to("/login").into_response(),
        Err(e) => {
            tracing::error!(error = %e, "sign-out");
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
    };
    crate::portal::forget_cookie(&mut res);
    res
}

async fn logout_form() -> Html<&'static str> {
    Html(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sign out · Posthorn</title></head>\
         <body><form method=\"post\" action=\"/logout\"><p>Sign out of Posthorn?</p>\
         <button type=\"submit\">Sign out</button> <a href=\"/developers\">Back</a></form></body></html>",
    )
}

/// Pages under /developers need a signed-in user (whose session outlived no password
/// change) or a portal session; anyone else goes to /login, unless the page was asked
/// for inside a frame: a portal whose cookie is gone gets the frameable "session ended"
/// page, never a blank frame.
async fn require_login(
    State(pool): State<PgPool>,
    session: Session,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    let portal = req.extensions().get::<app::auth::PortalSession>().is_some();
    if !portal && (path == "/developers" || path.starts_with("/developers/")) {
        let signed_in = matches!(app::auth::session_user(&pool, &session).await, Ok(Some(_)));
        if !signed_in {
            let framed = req
                .headers()
                .get("sec-fetch-dest")
                .is_some_and(|v| v.as_bytes() == b"iframe");
            if framed {
                return crate::portal::session_ended();
            }
            return Redirect::to(&login_then(req.uri())).into_response();
        }
    }
    next.run(req).await
}

/// `/login?next=<the page asked for>`, so that signing in lands there.
fn login_then(uri: &axum::http::Uri) -> String {
    let asked = uri.path_and_query().map_or("/developers", |p| p.as_str());
    match app::core::next_path::safe_next(asked) {
        Some(next) => {
            let next: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
            format!("/login?next={next}")
        }
        None => "/login".into(),
    }
}

/// Headers every response carries. Pages set their own Content-Security-Policy with the
/// nonce of their hydration script (`app::csp`); anything else gets the strictest one.
async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
    ));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    // Portal pages name the origins that may frame them in their policy instead.
    if res.extensions().get::<crate::portal::Framed>().is_none() {
        res.headers_mut()
            .insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    res
}

/// Server functions and sign-out refuse requests made from another site.
async fn same_origin_server_fns(headers: HeaderMap, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if (path.starts_with("/api/") || path == "/logout") && req.method() != axum::http::Method::GET {
        let cross_site =
            headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) == Some("cross-site");
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let origin_mismatch = headers
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok())
            .map(|o| {
                let o = o.split("://").nth(1).unwrap_or(o);
                Some(o) != host
            })
            .unwrap_or(false);
        if cross_site || origin_mismatch {
            return (StatusCode::FORBIDDEN, "cross-site request refused").into_response();
        }
    }
    next.run(req).await
}

/// Serves until `shutdown` resolves.
pub async fn serve(
    state: AppState,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let app = router(state);
    // An answer is one write; Nagle's algorithm would hold it for the client's
    // delayed acknowledgement of the one before.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}
