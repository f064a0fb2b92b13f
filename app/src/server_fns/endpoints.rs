//! The Webhooks page's server functions: endpoints and their cards.

use crate::core::EndpointId;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::{DeliveryRow, EndpointView};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndpointStats {
    pub endpoint: EndpointView,
    pub attempts_24h: i64,
    pub succeeded_24h: i64,
    pub p95_ms: Option<f64>,
    /// Success ratio per hour over the last 24 hours (None: no attempts that hour).
    pub hourly: Vec<Option<f64>>,
    /// Failed attempts of the last 24 hours grouped by response code or error kind,
    /// most frequent first: an incident read at a glance.
    pub failures: Vec<(String, i64)>,
    /// This endpoint receives the project's `endpoint.disabled` notices.
    pub is_ops: bool,
    /// Its client certificate and filter and the forms for them, as HTML (see
    /// `components::cert_card`, `components::filter_card`).
    pub cert_html: String,
}

#[server(endpoint = "list_endpoints")]
pub async fn list_endpoints() -> Result<Vec<EndpointStats>, ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{endpoint_activity, endpoints, projects},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadEndpoints).await?;
    let list = endpoints::list(&ctx.pool, &access).await?;
    let ops = projects::ops_endpoint(&ctx.pool, access.project_id).await?;
    // The error a certificate form came back with (`cert_endpoint`, `cert_error` in the
    // page's address, read while the page renders on the server).
    let page: Option<http::request::Parts> = leptos::prelude::use_context();
    let query: Vec<(String, String)> = page
        .and_then(|p| p.uri.query().map(str::to_string))
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let cert_error = |id: EndpointId| {
        let named = query
            .iter()
            .any(|(k, v)| k == "cert_endpoint" && *v == id.to_string());
        named
            .then(|| {
                query
                    .iter()
                    .find(|(k, _)| k == "cert_error")
                    .map(|(_, v)| v.as_str())
            })
            .flatten()
    };
    let editable = access.require(Action::EditEndpoint).is_ok();
    let action = {
        use leptos::server_fn::ServerFn;
        SetClientCertificate::url()
    };
    let now = chrono::Utc::now();
    let days = projects::window_days(&ctx.pool, access.project_id, ctx.cfg.retention_days).await?;
    let mut filter_cards =
        super::filters::FilterCards::read(&ctx.pool, &access, &list, &query, days).await?;
    let endpoint_activity::Activity {
        hourly: rows,
        p95,
        failures,
    } = endpoint_activity::last_day(&ctx.pool, access.project_id).await?;
    Ok(list
        .into_iter()
        .map(|endpoint| {
            let mine: Vec<&(i64, i32, i64, i64)> =
                rows.iter().filter(|r| r.0 == endpoint.id.get()).collect();
            let hourly = (0..24)
                .rev()
                .map(|h| {
                    mine.iter()
                        .find(|r| r.1 == h)
                        .filter(|r| r.2 > 0)
                        .map(|r| r.3 as f64 / r.2 as f64)
                })
                .collect();
            // A `posthorn listen` session: its deliveries go to the CLI's machine.
            let mut cert_html = endpoint
                .listen
                .as_deref()
                .map(listen_mark)
                .unwrap_or_default();
            cert_html += &destination_mark(&endpoint);
            cert_html += &crate::components::cert_card::html(
                &crate::components::cert_card::CertCard {
                    id: endpoint.id,
                    subject: endpoint.client_cert_subject.as_deref(),
                    not_after: endpoint.client_cert_not_after,
                    error: cert_error(endpoint.id),
                    editable,
                    action,
                    public_key: endpoint
                        .public_key
                        .as_deref()
                        .filter(|_| endpoint.signature_scheme == crate::core::ed25519::ED25519),
                },
                now,
            );
            cert_html.push_str(&filter_cards.html(&endpoint, now));
            EndpointStats {
                cert_html,
                attempts_24h: mine.iter().map(|r| r.2).sum(),
                succeeded_24h: mine.iter().map(|r| r.3).sum(),
                p95_ms: p95
                    .iter()
                    .find(|p| p.0 == endpoint.id.get())
                    .and_then(|p| p.1),
                hourly,
                is_ops: ops == Some(endpoint.id.get()),
                failures: failures
                    .iter()
                    .filter(|f| f.0 == endpoint.id.get())
                    .map(|f| (f.1.clone(), f.2))
                    .collect(),
                endpoint,
            }
        })
        .collect())
}

#[cfg(feature = "ssr")]
fn parse_types(text: &str) -> Result<Vec<String>, String> {
    let entries: Vec<String> = text
        .split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    crate::core::event_type::parse_subscription(&entries)
}

/// Creates an endpoint; returns its secret (shown once here, revealable later).
#[server(endpoint = "create_endpoint")]
pub async fn create_endpoint(
    url: String,
    event_types: String,
    description: String,
) -> Result<String, ServerFnError> {
    use crate::{
        auth::current_access, core::endpoint_url::parse_endpoint_url, core::permissions::Action,
        ctx::server_ctx, error::AppError,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::CreateEndpoint).await?;
    let url = parse_endpoint_url(url.trim()).map_err(AppError::Invalid)?;
    let types = parse_types(&event_types).map_err(AppError::Invalid)?;
    let (_, secret) = crate::use_cases::endpoints::create(
        &ctx.pool,
        &access,
        crate::use_cases::endpoints::NewEndpoint {
            url: url.to_string(),
            destination: None,
            event_types: types,
            description,
            headers: None,
            rate_limit: None,
            client_cert: None,
            signature_scheme: None,
            filter: None,
        },
    )
    .await?;
    Ok(secret)
}

#[server(endpoint = "update_endpoint")]
pub async fn update_endpoint(
    id: EndpointId,
    url: Option<String>,
    event_types: Option<String>,
    enabled: Option<bool>,
    /// Attempts per second; "unlimited" (or empty) lifts the limit; absent leaves it as it is.
    #[server(default)]
    rate_limit: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{
        auth::current_access, core::endpoint_url::parse_endpoint_url, core::permissions::Action,
        ctx::server_ctx, error::AppError,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::EditEndpoint).await?;
    let rate_limit = rate_limit
        .map(|r| crate::core::throttle::parse_rate_limit_text(&r))
        .transpose()
        .map_err(AppError::Invalid)?;
    let url = url
        .filter(|u| !u.trim().is_empty())
        .map(|u| parse_endpoint_url(u.trim()).map(|u| u.to_string()))
        .transpose()
        .map_err(AppError::Invalid)?;
    let types = event_types
        .filter(|t| !t.trim().is_empty())
        .map(|t| parse_types(&t))
        .transpose()
        .map_err(AppError::Invalid)?;
    crate::use_cases::endpoints::change(
        &ctx.pool,
        &access,
        id,
        crate::use_cases::endpoints::EndpointChange {
            url,
            event_types: types,
            enabled,
            rate_limit,
            ..Default::default()
        },
    )
    .await?;
    Ok(())
}

/// Sets (with a value) or removes (without) one custom header of an endpoint; returns
/// the header names now set. Values are write-only: the cabinet never gets them back.
#[server(endpoint = "edit_endpoint_header")]
pub async fn edit_endpoint_header(
    id: EndpointId,
    name: String,
    value: Option<String>,
) -> Result<Vec<String>, ServerFnError> {
    use crate::{
        auth::current_access,
        core::custom_headers::{parse_custom_headers, MAX_HEADERS},
        core::permissions::Action,
        ctx::server_ctx,
        db::endpoints,
        error::AppError,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::EditCustomHeaders).await?;
    let name = name.trim().to_string();
    let value = value.filter(|v| !v.is_empty());
    if let Some(v) = &value {
        parse_custom_headers(&[(name.clone(), v.clone())]).map_err(AppError::Invalid)?;
        let names = endpoints::custom_header_names(&ctx.pool, &access, id).await?;
        if names.len() >= MAX_HEADERS && !names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            return Err(AppError::Invalid(format!("at most {MAX_HEADERS} custom headers")).into());
        }
    }
    let names =
        crate::use_cases::endpoints::edit_header(&ctx.pool, &access, id, &name, value.as_deref())
            .await?;
    Ok(names)
}

/// Chooses the endpoint that receives `endpoint.disabled` notices for this project.
#[server(endpoint = "set_ops_endpoint")]
pub async fn set_ops_endpoint(id: EndpointId) -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::SetOpsEndpoint).await?;
    crate::use_cases::endpoints::set_ops_endpoint(&ctx.pool, &access, id).await?;
    Ok(())
}

#[server(endpoint = "delete_endpoint")]
pub async fn delete_endpoint(id: EndpointId) -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::DeleteEndpoint).await?;
    crate::use_cases::endpoints::delete(&ctx.pool, &access, id).await?;
    Ok(())
}

/// The current secret, on an explicit click; support staff never see secrets.
#[server(endpoint = "reveal_secret")]
pub async fn reveal_secret(id: EndpointId) -> Result<String, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::RevealSecret).await?;
    Ok(use_cases::endpoints::reveal_secret(&ctx.pool, &access, id).await?)
}

#[server(endpoint = "rotate_secret")]
pub async fn rotate_secret(id: EndpointId) -> Result<String, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::RotateSecret).await?;
    let secret = crate::use_cases::endpoints::rotate_secret(&ctx.pool, &access, id).await?;
    Ok(secret)
}

/// Sends a `test.ping` event to one endpoint; returns the queued attempt.
#[server(endpoint = "test_send")]
pub async fn test_send(id: EndpointId) -> Result<DeliveryRow, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::TestSend).await?;
    // With the failure in words (the raw error stays beside it, under "Details").
    Ok(
        crate::use_cases::deliveries::test_send(&ctx.pool, &access, id)
            .await?
            .explain(),
    )
}

/// Sets an endpoint's client certificate (PEM certificate and key, checked as the API
/// checks them) or, with both empty, removes it. The key is write-only. Sent by a plain
/// form (no script: the browser bundle carries nothing of it), so it answers with a
/// redirect back to the page: clean on success, with `cert_error` and `cert_endpoint`
/// naming what was wrong otherwise.
#[server(endpoint = "set_client_certificate")]
pub async fn set_client_certificate(
    id: EndpointId,
    cert: String,
    key: String,
) -> Result<(), ServerFnError> {
    use crate::{core::permissions::Action, ctx::server_ctx, error::AppError};
    let ctx = server_ctx()?;
    let access = crate::auth::endpoint_access(id, Action::EditEndpoint).await?;
    let result: Result<(), ServerFnError> = async {
        let cert = if cert.trim().is_empty() && key.trim().is_empty() {
            None
        } else {
            Some(
                crate::core::client_cert::check(&cert, &key, chrono::Utc::now())
                    .map_err(AppError::Invalid)?,
            )
        };
        crate::use_cases::endpoints::change(
            &ctx.pool,
            &access,
            id,
            crate::use_cases::endpoints::EndpointChange {
                client_cert: Some(cert),
                ..Default::default()
            },
        )
        .await?;
        Ok(())
    }
    .await;
    let headers: http::HeaderMap = leptos_axum::extract().await.unwrap_or_default();
    let back = headers
        .get(http::header::REFERER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("/developers/webhooks");
    let error = result
        .err()
        .map(|e| (id.get(), crate::components::widgets::error_text(&e)));
    leptos_axum::redirect(&crate::core::next_path::with_cert_error(back, error));
    Ok(())
}

/// A broker destination's mark on the card: what kind, where, and whether it has
/// credentials (never what they are).
#[cfg(feature = "ssr")]
fn destination_mark(endpoint: &EndpointView) -> String {
    use crate::core::{alerts::escape_html, destination::Settings};
    let Some(settings) = endpoint
        .destination_settings
        .as_deref()
        .and_then(|s| serde_json::from_str::<Settings>(s).ok())
    else {
        return String::new();
    };
    let (kind, url, name) = match &settings {
        Settings::Redis { url, stream, .. } => ("Redis stream", url, stream),
        Settings::Nats { url, subject } => ("NATS JetStream", url, subject),
        Settings::Mqtt { url, topic, .. } => ("MQTT topic", url, topic),
        Settings::Rabbitmq {
            url,
            exchange,
            routing_key,
        } => (
            "RabbitMQ",
            url,
            &format!(
                "{} → {routing_key}",
                if exchange.is_empty() {
                    "(default)"
                } else {
                    exchange
                }
            ),
        ),
    };
    let creds = if endpoint.credentials_set {
        "with credentials (sealed, never shown)"
    } else {
        "without credentials"
    };
    format!(
        "<span class=\"badge badge-redirect\" data-testid=\"destination-badge\" \
         title=\"Publishes each attempt to {url}, {creds}\">{kind} · {name}</span> ",
        kind = kind,
        url = escape_html(url),
        name = escape_html(name),
    )
}

/// The card's mark for a listen session: its name and whether its CLI is connected.
#[cfg(feature = "ssr")]
fn listen_mark(label: &str) -> String {
    format!(
        "<span class=\"badge badge-redirect\" data-testid=\"listen-badge\" title=\"Forwarded \
         by posthorn listen to the URL shown; waiting: its CLI is away (the session ends after \
         10 minutes)\">Listen session · {}</span> ",
        crate::core::alerts::escape_html(label)
    )
}
