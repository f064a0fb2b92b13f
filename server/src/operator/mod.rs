//! The operator API (`/operator/v1`): how the platform that runs Posthorn makes its
//! customers' projects, hands out their keys, reads their usage and opens the portal for
//! them. Operator keys open this API and nothing else; nothing else opens it. Every call
//! is audited as `operator:<key name>`.

pub mod access;
pub mod limits;
pub mod openapi;
pub mod projects;

use app::core::ProjectId;
use std::net::SocketAddr;

use app::{
    core::ratelimit::{address_bucket, window_start},
    db::{operator_keys, rate_counters},
};
use axum::{
    extract::{ConnectInfo, Request, State},
    http::{header, HeaderValue, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{delete, get, post},
    Router,
};

use crate::{api::ApiError, state::AppState};

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/projects", post(projects::create).get(projects::list))
        .route(
            "/projects/{id}",
            get(projects::get)
                .patch(projects::update)
                .delete(projects::delete),
        )
        .route("/projects/{id}/api-keys", post(access::create_key))
        .route(
            "/projects/{id}/api-keys/{key_id}",
            delete(access::revoke_key),
        )
        .route("/projects/{id}/usage", get(access::usage))
        .route("/projects/{id}/portal-links", post(access::portal_link))
        .route("/openapi.json", get(openapi::document))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .layer(middleware::from_fn(crate::api::refuse_nul_in_path))
        .layer(middleware::from_fn_with_state(
            state,
            authenticate_and_audit,
        ))
}

/// The operator key a request came with.
#[derive(Clone, Debug)]
pub struct Operator {
    pub name: String,
}

impl Operator {
    /// How the audit log and the projects' own records name this caller.
    pub fn actor(&self) -> String {
        format!("operator:{}", self.name)
    }

    /// The operator speaks for the project, like its API key does.
    pub fn access(&self, project_id: ProjectId) -> app::auth::Access {
        app::auth::system_access(project_id, &self.actor())
    }
}

/// Lets operator keys in (and only them), counts wrong keys against the caller's address,
/// and writes every call to the audit log once it is answered.
async fn authenticate_and_audit(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    if req.uri().path().ends_with("/openapi.json") {
        return next.run(req).await;
    }
    let presented = crate::api::bearer(&req);
    let operator = match &presented {
        Some(key) => match operator_keys::authenticate(&state.pool, key).await {
            Ok(found) => found,
            Err(e) => return ApiError::from(e).into_response(),
        },
        None => None,
    };
    let Some(name) = operator else {
        let now = chrono::Utc::now().timestamp();
        let bucket = format!("operator-ip:{}", address_bucket(addr.ip()));
        let count = rate_counters::hit(&state.pool, &bucket, window_start(now))
            .await
            .unwrap_or(u32::MAX);
        // Wrong keys count per address like the public API's: the trial plan's minute.
        if count
            > state
                .cfg
                .plan_limits
                .per_minute(app::core::ratelimit::Plan::Trial)
        {
            let mut r = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "too many requests without a valid operator key; retry in a minute",
            )
            .into_response();
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(60));
            return r;
        }
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            if presented.is_some() {
                "the operator key is not valid"
            } else {
                "missing Authorization: Bearer <operator key>"
            },
        )
        .into_response();
    };
    let operator = Operator { name };
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    req.extensions_mut().insert(operator.clone());
    let response = next.run(req).await;
    let status = response.status().as_u16();
    if let Err(e) = app::use_cases::accounts::audit_operator_call(
        &state.pool,
        &operator.actor(),
        &method,
        &path,
        status,
    )
    .await
    {
        tracing::warn!(error = %e, "could not audit an operator call");
    }
    response
}
