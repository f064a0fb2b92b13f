//! `/listen`: `posthorn listen` opens (or reattaches to) a listen session here, then
//! holds its WebSocket at `/listen/{id}/connect`, where the session's deliveries go out.

use app::core::EndpointId;
use app::{
    core::permissions::Action,
    core::{endpoint_url::parse_endpoint_url, event_type::parse_subscription},
    use_cases,
};
use axum::{
    extract::{
        ws::{rejection::WebSocketUpgradeRejection, WebSocketUpgrade},
        Path, State,
    },
    http::StatusCode,
    response::{IntoResponse, Response},
    Extension, Json,
};
use serde::{Deserialize, Serialize};

use super::{webhooks::Webhook, ApiError, ApiJson, Caller};
use crate::{
    listen::{protocol::MAX_FROM_CLI, registry::Slot, session::Session},
    state::AppState,
};

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenListen {
    /// The local URL the CLI forwards to (shown as the endpoint's `url`).
    #[schema(schema_with = super::webhooks::endpoint_url)]
    pub forward: String,
    /// Event types, as an endpoint's `events` (absent or null: every type).
    #[schema(schema_with = super::webhooks::optional_subscription)]
    pub events: Option<Vec<String>>,
    /// Reattach to the project's live session of this name (same endpoint, same secret,
    /// the attempts that waited), or start one so named.
    #[schema(pattern = "^[A-Za-z0-9._-]{1,64}$")]
    pub name: Option<String>,
    /// A CEL filter, as an endpoint's (at most 1024 bytes).
    #[schema(max_length = 1024, pattern = r"\S")]
    pub filter: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ListenSession {
    pub endpoint: Webhook,
    /// `whsec_…`: the local receiver checks signatures with it.
    #[schema(pattern = r"^whsec_[A-Za-z0-9+/]+={0,2}$")]
    pub secret: String,
    /// The path (under `/public/v1`) of the session's WebSocket.
    pub connect_path: String,
    /// An existing named session was taken up again.
    pub reattached: bool,
}

/// Opens a listen session for `posthorn listen`: 201 for a new one, 200 when a named
/// one is reattached. A project holds at most 5; each counts as an endpoint.
#[utoipa::path(post, path = "/listen", request_body = OpenListen,
    responses((status = 201, body = ListenSession), (status = 200, body = ListenSession)))]
pub async fn open(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<OpenListen>,
) -> Result<Response, ApiError> {
    let forward = parse_endpoint_url(&body.forward).map_err(ApiError::invalid)?;
    let events = parse_subscription(body.events.as_deref().unwrap_or(&["*".to_string()]))
        .map_err(ApiError::invalid)?;
    let access = caller.access(Action::CreateEndpoint)?;
    let opened = use_cases::listen::open(
        &state.pool,
        &access,
        use_cases::listen::OpenListen {
            name: body.name,
            forward: forward.to_string(),
            event_types: events,
            filter: body.filter,
        },
    )
    .await?;
    let status = if opened.reattached {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let id = opened.endpoint.id;
    let session = ListenSession {
        endpoint: Webhook::from_view(opened.endpoint, None),
        secret: opened.secret,
        connect_path: format!("/public/v1/listen/{id}/connect"),
        reattached: opened.reattached,
    };
    Ok((status, Json(session)).into_response())
}

/// The session's WebSocket (not in the API document: OpenAPI has no words for it). The
/// messages are in `crate::listen::protocol`.
pub async fn connect(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let access = caller.access(Action::CreateEndpoint)?;
    let id = super::parse_id(&id)?;
    let endpoint = app::db::endpoints::get(&state.pool, &access, EndpointId::new(id)).await?;
    if !endpoint.is_listen() {
        return Err(app::error::AppError::NotFound.into());
    }
    let upgrade = upgrade.map_err(|_| {
        ApiError::new(
            StatusCode::UPGRADE_REQUIRED,
            "upgrade_required",
            "this is a WebSocket: connect with `posthorn listen`",
        )
    })?;
    let slot = Slot::take(access.project_id).ok_or_else(|| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_connections",
            "the project holds too many listen connections on this server; stop a CLI",
        )
    })?;
    let session = Session {
        pool: state.pool.clone(),
        cfg: state.cfg.clone(),
        project_id: access.project_id,
        endpoint_id: EndpointId::new(id),
        unnamed: endpoint.listen_name.is_none(),
        slot,
    };
    Ok(upgrade
        .max_message_size(MAX_FROM_CLI)
        .max_frame_size(MAX_FROM_CLI)
        .on_upgrade(move |socket| session.run(socket)))
}
