//! The portal: a project's dashboard pages, opened by the operator for one of its users
//! with a single-use link, shown inside the operator's own page. A portal session has its
//! own cookie (`SameSite=None; Secure; Partitioned`, so it works in a cross-site frame),
//! reaches one project and three pages, and may be framed only by the origins the
//! operator listed for the project. It never acts for a signed-in dashboard user: a
//! browser holding both is the dashboard user's, and a link opened there is refused.

use app::{
    auth::{portal_cookie, portal_cookie_cleared, PortalCookie},
    db::portal::{self, PortalSession},
};
use axum::{
    extract::{Path, Request, State},
    http::{header, HeaderValue, StatusCode},
    middleware::Next,
    response::{Html, IntoResponse, Redirect, Response},
};
use tower_sessions::Session;

use crate::state::{AppState, PORTAL_COOKIE};

/// The pages a portal session may open (SPEC "Operator API and portal").
const PAGES: [&str; 3] = [
    "/developers/deliveries",
    "/developers/webhooks",
    "/developers/events",
];

/// Marks a response whose framing the portal decided: no `X-Frame-Options` is added.
#[derive(Clone, Copy, Debug)]
pub struct Framed;

/// `GET /portal/{token}`: uses the link once and signs this browser in, or refuses. A
/// browser signed in to the dashboard is refused and the link kept: a hostile page could
/// otherwise send a signed-in user into its own project (login CSRF).
pub async fn redeem(
    State(state): State<AppState>,
    session: Session,
    Path(token): Path<String>,
) -> Response {
    match app::auth::session_user(&state.pool, &session).await {
        Ok(None) => {}
        Ok(Some(_)) => {
            return notice(
                StatusCode::CONFLICT,
                "You are signed in to Posthorn",
                "This browser is signed in to the Posthorn dashboard, so it does not open a customer's portal: what you did there would land in that customer's project. Sign out at /logout first, or open the link in another browser.",
            )
        }
        Err(e) => return unavailable(e),
    }
    let lifetime = state.cfg.portal_session.as_secs();
    match portal::redeem(&state.pool, &token, lifetime).await {
        Ok(Some(session)) => {
            // The cookie outlives the session by a day, so a browser that comes back
            // after the end is told so (a frameable page), not sent to /login.
            let cookie = format!(
                "{PORTAL_COOKIE}={session}; Path=/; Max-Age={}; HttpOnly; Secure; SameSite=None; Partitioned",
                lifetime + 86_400
            );
            let mut res = Redirect::to("/developers/deliveries").into_response();
            *res.status_mut() = StatusCode::SEE_OTHER;
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                res.headers_mut().insert(header::SET_COOKIE, v);
            }
            res
        }
        Ok(None) => notice(
            StatusCode::NOT_FOUND,
            "This link cannot be used",
            "Portal links work once and for a few minutes. Open the delivery log again from the application you came from.",
        ),
        Err(e) => unavailable(e),
    }
}

fn unavailable(e: app::error::AppError) -> Response {
    tracing::error!(error = %e, "portal");
    notice(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again shortly",
        "The portal could not be opened just now.",
    )
}

/// A page with no data and no actions, frameable by anyone (nothing on it can be
/// clicked for the visitor), so a frame never goes blank.
fn notice(status: StatusCode, title: &str, text: &str) -> Response {
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title>\
         <style>body{{font:15px/1.5 system-ui,sans-serif;margin:2rem;color:#1f2937}}h1{{font-size:1.2rem}}</style>\
         </head><body><main data-testid=\"portal-notice\"><h1>{title}</h1><p>{text}</p></main></body></html>"
    );
    let mut res = (status, Html(page)).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors *",
        ),
    );
    res.extensions_mut().insert(Framed);
    res
}

/// What a browser whose portal session ended sees, inside the frame or not.
pub fn session_ended() -> Response {
    let mut res = notice(
        StatusCode::UNAUTHORIZED,
        "Your session has ended",
        "For your security, portal sessions end after a while. Open the delivery log again from the application you came from.",
    );
    forget_cookie(&mut res);
    res
}

/// After the portal's sign-out button (`POST /logout`): a page that may stay in the
/// operator's frame.
pub fn signed_out() -> Response {
    let mut res = notice(
        StatusCode::OK,
        "You have signed out",
        "Open the delivery log again from the application you came from.",
    );
    forget_cookie(&mut res);
    res
}

/// Adds the header that makes the browser drop its portal cookie.
pub fn forget_cookie(res: &mut Response) {
    if let Ok(v) = HeaderValue::from_str(&portal_cookie_cleared()) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// Looks the portal cookie up before anything else runs: a live session goes into the
/// request for pages and server functions to find (`app::auth::portal_session`), keeps to
/// its three pages, and has its pages framed only by the project's origins; an ended one
/// gets the "session ended" page instead of a page. A signed-in dashboard user's request
/// passes as theirs alone, and the browser is told to drop the portal cookie.
pub async fn gate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let found = portal_cookie(req.headers());
    if found == PortalCookie::Absent {
        return next.run(req).await;
    }
    let dashboard = match req.extensions().get::<Session>() {
        Some(session) => app::auth::session_user(&state.pool, session).await,
        None => Ok(None),
    };
    match dashboard {
        Ok(None) => {}
        Ok(Some(_)) => {
            let mut res = next.run(req).await;
            forget_cookie(&mut res);
            return res;
        }
        Err(e) => {
            tracing::error!(error = %e, "session lookup");
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
    }
    let path = req.uri().path();
    let page = path == "/developers" || path.starts_with("/developers/");
    let PortalCookie::One(token) = found else {
        return if page {
            session_ended()
        } else {
            next.run(req).await
        };
    };
    match portal::session(&state.pool, &token).await {
        Ok(Some(session)) => {
            if path == "/developers" {
                return Redirect::to("/developers/deliveries").into_response();
            }
            let framing = Framing::of(&session);
            if page && !PAGES.contains(&path) {
                let mut res = notice(
                    StatusCode::NOT_FOUND,
                    "Not found",
                    "This page is not part of the portal.",
                );
                res.headers_mut().remove(header::CONTENT_SECURITY_POLICY);
                return framing.apply(res);
            }
            req.extensions_mut().insert(session);
            framing.apply(next.run(req).await)
        }
        Ok(None) if page => session_ended(),
        Ok(None) => next.run(req).await,
        Err(e) => {
            tracing::error!(error = %e, "portal session lookup");
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
    }
}

/// The project's framing rules for its portal pages.
struct Framing {
    ancestors: Option<String>,
    logo_origin: Option<String>,
}

impl Framing {
    fn of(session: &PortalSession) -> Framing {
        Framing {
            ancestors: (!session.frame_ancestors.is_empty())
                .then(|| session.frame_ancestors.join(" ")),
            logo_origin: session
                .brand
                .logo_url
                .as_deref()
                .and_then(|l| app::core::operator::check_logo_url(l).ok()),
        }
    }

    /// Names the project's origins in `frame-ancestors` (no `X-Frame-Options`, which
    /// cannot name them) and lets the brand's logo load; a project with no origins
    /// keeps `'none'`.
    fn apply(&self, mut res: Response) -> Response {
        let policy = res
            .headers()
            .get(header::CONTENT_SECURITY_POLICY)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
            )
            .to_string();
        let mut policy = match &self.logo_origin {
            Some(origin) => policy.replacen(
                "img-src 'self' data:",
                &format!("img-src 'self' data: {origin}"),
                1,
            ),
            None => policy,
        };
        if let Some(ancestors) = &self.ancestors {
            policy = policy.replace(
                "frame-ancestors 'none'",
                &format!("frame-ancestors {ancestors}"),
            );
            res.extensions_mut().insert(Framed);
        }
        if let Ok(v) = HeaderValue::from_str(&policy) {
            res.headers_mut().insert(header::CONTENT_SECURITY_POLICY, v);
        }
        res
    }
}
