//! Endpoints: create, change, delete, rotate the secret; the same path from the cabinet
//! and from the API, audited either way.

use crate::core::EndpointId;
use sqlx::PgPool;

use crate::{
    auth::Access,
    core::{client_cert::ClientCert, limits::Limit},
    core::{permissions::Action, text::check_description},
    db::{audit, endpoints, limits, projects, signature_schemes},
    error::{AppError, AppResult},
    model::EndpointView,
};

use crate::core::ed25519::NO_SECRET;

/// A new endpoint, already parsed (URL checked, event types valid, headers allowed).
pub struct NewEndpoint {
    /// An HTTP endpoint's URL; for a broker destination, ignored (its target is written).
    pub url: String,
    /// A broker to publish to instead of `url` (checked by `core::destination::parse`).
    pub destination: Option<crate::core::destination::Destination>,
    pub event_types: Vec<String>,
    pub description: String,
    pub headers: Option<Vec<(String, String)>>,
    /// Attempts per second (None: unlimited).
    pub rate_limit: Option<i32>,
    pub client_cert: Option<ClientCert>,
    /// `hmac-sha256` (None: the default) or `ed25519`, checked.
    pub signature_scheme: Option<&'static str>,
    /// A CEL expression over the event (checked here).
    pub filter: Option<String>,
}

/// What to change; `None` leaves a field as it is. `headers` replaces all of them.
#[derive(Default)]
pub struct EndpointChange {
    pub url: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
    pub headers: Option<Vec<(String, String)>>,
    /// `Some(None)` lifts the limit; `None` leaves it as it is.
    pub rate_limit: Option<Option<i32>>,
    /// `Some(None)` removes the certificate; `None` leaves it as it is.
    pub client_cert: Option<Option<ClientCert>>,
    /// A scheme to switch to (checked); both sign for 24 hours after a switch.
    pub signature_scheme: Option<&'static str>,
    /// `Some(None)` removes the filter; `None` leaves it as it is.
    pub filter: Option<Option<String>>,
    /// New settings for a broker destination of the same type; credentials left out are
    /// kept.
    pub destination: Option<crate::core::destination::Destination>,
}

/// A filter as saved: checked (422 with the parser's message and position otherwise).
fn checked_filter(filter: &str) -> AppResult<&str> {
    // Compiled, not kept: only fan-out fills the cache of compiled filters.
    crate::core::filter::compile(filter)
        .map(|_| filter)
        .map_err(AppError::Invalid)
}

/// Returns the endpoint and its secret (shown once to its creator).
pub async fn create(
    pool: &PgPool,
    access: &Access,
    new: NewEndpoint,
) -> AppResult<(EndpointView, String)> {
    access.require(Action::CreateEndpoint)?;
    check_description(&new.description).map_err(AppError::Invalid)?;
    if let Some(f) = &new.filter {
        checked_filter(f)?;
    }
    let mut tx = pool.begin().await?;
    let limits = limits::admit(&mut tx, access.project_id, Limit::Endpoints, 1).await?;
    limits::admit_event_types(&limits, &new.event_types)?;
    let target = new.destination.as_ref().map(|d| d.settings.target());
    let (mut ep, secret) = endpoints::create(
        &mut tx,
        access,
        endpoints::NewEndpoint {
            url: target.as_deref().unwrap_or(&new.url),
            event_types: &new.event_types,
            description: &new.description,
            rate_limit: new.rate_limit,
        },
    )
    .await?;
    if let Some(d) = &new.destination {
        endpoints::set_destination(&mut *tx, access, ep.id, d).await?;
        ep = endpoints::get(&mut *tx, access, ep.id).await?;
    }
    if let Some(headers) = new.headers {
        endpoints::set_custom_headers(&mut *tx, access, ep.id, &headers).await?;
        ep.header_names = headers.into_iter().map(|(n, _)| n).collect();
    }
    if let Some(scheme) = new.signature_scheme {
        signature_schemes::set(&mut tx, access, ep.id.get(), scheme, true).await?;
        (ep.signature_scheme, ep.public_key) =
            signature_schemes::of(&mut *tx, access, ep.id.get()).await?;
    }
    if let Some(f) = &new.filter {
        endpoints::set_filter(&mut *tx, access, ep.id, Some(f)).await?;
        ep.filter = Some(f.clone());
    }
    if let Some(cert) = &new.client_cert {
        endpoints::set_client_cert(&mut *tx, access, ep.id, Some(cert)).await?;
        ep.client_cert_subject = Some(cert.subject.clone());
        ep.client_cert_not_after = Some(cert.not_after);
    }
    audit::record(
        &mut *tx,
        access,
        "endpoint.create",
        &format!("endpoint #{}", ep.id),
        serde_json::json!({ "url": ep.url, "destination": ep.destination }),
    )
    .await?;
    tx.commit().await?;
    Ok((ep, secret))
}

pub async fn change(
    pool: &PgPool,
    access: &Access,
    id: EndpointId,
    change: EndpointChange,
) -> AppResult<(EndpointView, Option<String>)> {
    access.require(Action::EditEndpoint)?;
    if let Some(d) = &change.description {
        check_description(d).map_err(AppError::Invalid)?;
    }
    if let Some(Some(f)) = &change.filter {
        checked_filter(f)?;
    }
    let action = match change.enabled {
        Some(true) => "endpoint.enable",
        Some(false) => "endpoint.disable",
        None => "endpoint.edit",
    };
    let detail = serde_json::json!({
        "url": change.url,
        "events": change.event_types,
        "headers": change.headers.as_ref().map(|h| h.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()),
        "rate_limit": change.rate_limit,
        "client_certificate": change.client_cert.as_ref().map(|c| c.as_ref().map(|c| &c.subject)),
        "signature_scheme": change.signature_scheme,
        "filter": change.filter,
        "destination": change.destination.as_ref().map(|d| d.settings.target()),
    });
    let mut tx = pool.begin().await?;
    if change.url.is_some() || change.destination.is_some() {
        // A broker endpoint stays one of its type, and no other becomes one (a listen
        // session's `url` changes as before).
        let kind = endpoints::get(&mut *tx, access, id).await?.destination;
        let asked = change
            .destination
            .as_ref()
            .map_or("http", |d| d.settings.kind());
        let broker = |k: &str| !matches!(k, "http" | "listen");
        if (broker(&kind) || broker(asked)) && kind != asked {
            return Err(AppError::Invalid(format!(
                "this endpoint's destination is `{kind}`, and an endpoint's type does not change \
                 after creation: make a new endpoint for `{asked}`"
            )));
        }
    }
    if let Some(d) = &change.destination {
        endpoints::set_destination(&mut *tx, access, id, d).await?;
    }
    if let Some(types) = &change.event_types {
        let limits = limits::of(&mut tx, access.project_id).await?;
        limits::admit_event_types(&limits, types)?;
    }
    let mut ep = endpoints::update(
        &mut *tx,
        access,
        id,
        endpoints::EndpointPatch {
            url: change.url,
            event_types: change.event_types,
            description: change.description,
            enabled: change.enabled,
            rate_limit: change.rate_limit,
        },
    )
    .await?;
    if let Some(headers) = change.headers {
        endpoints::set_custom_headers(&mut *tx, access, id, &headers).await?;
        ep.header_names = headers.into_iter().map(|(n, _)| n).collect();
    }
    if let Some(cert) = &change.client_cert {
        endpoints::set_client_cert(&mut *tx, access, id, cert.as_ref()).await?;
        ep.client_cert_subject = cert.as_ref().map(|c| c.subject.clone());
        ep.client_cert_not_after = cert.as_ref().map(|c| c.not_after);
    }
    if let Some(f) = &change.filter {
        endpoints::set_filter(&mut *tx, access, id, f.as_deref()).await?;
        ep.filter = f.clone();
    }
    let mut secret = None;
    if let Some(scheme) = change.signature_scheme {
        secret = signature_schemes::set(&mut tx, access, id.get(), scheme, false).await?;
        (ep.signature_scheme, ep.public_key) =
            signature_schemes::of(&mut *tx, access, id.get()).await?;
    }
    audit::record(&mut *tx, access, action, &format!("endpoint #{id}"), detail).await?;
    tx.commit().await?;
    Ok((ep, secret))
}

pub async fn delete(pool: &PgPool, access: &Access, id: EndpointId) -> AppResult<()> {
    access.require(Action::DeleteEndpoint)?;
    let mut tx = pool.begin().await?;
    endpoints::delete(&mut tx, access, id).await?;
    audit::record(
        &mut *tx,
        access,
        "endpoint.delete",
        &format!("endpoint #{id}"),
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A new secret; the old one keeps signing alongside it for 24 hours.
pub async fn rotate_secret(pool: &PgPool, access: &Access, id: EndpointId) -> AppResult<String> {
    access.require(Action::RotateSecret)?;
    let mut tx = pool.begin().await?;
    if signature_schemes::of(&mut *tx, access, id.get()).await?.0 == crate::core::ed25519::ED25519 {
        return Err(AppError::Conflict(NO_SECRET.into()));
    }
    let secret = endpoints::rotate_secret(&mut *tx, access, id).await?;
    audit::record(
        &mut *tx,
        access,
        "secret.rotate",
        &format!("endpoint #{id}"),
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(secret)
}

/// Sets (with a value) or removes (without) one custom header; returns the names now set.
pub async fn edit_header(
    pool: &PgPool,
    access: &Access,
    id: EndpointId,
    name: &str,
    value: Option<&str>,
) -> AppResult<Vec<String>> {
    access.require(Action::EditCustomHeaders)?;
    let mut tx = pool.begin().await?;
    let names = endpoints::edit_custom_header(&mut *tx, access, id, name, value).await?;
    audit::record(
        &mut *tx,
        access,
        if value.is_some() {
            "endpoint.header.set"
        } else {
            "endpoint.header.remove"
        },
        &format!("endpoint #{id}"),
        serde_json::json!({ "header": name }),
    )
    .await?;
    tx.commit().await?;
    Ok(names)
}

/// Chooses the endpoint that receives the project's operational notices.
pub async fn set_ops_endpoint(pool: &PgPool, access: &Access, id: EndpointId) -> AppResult<()> {
    access.require(Action::SetOpsEndpoint)?;
    let mut tx = pool.begin().await?;
    endpoints::get(&mut *tx, access, id).await?;
    projects::set_ops_endpoint(&mut *tx, access.project_id, id).await?;
    audit::record(
        &mut *tx,
        access,
        "ops_endpoint.set",
        &format!("endpoint #{id}"),
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The endpoint's signing secret, shown to whoever may reveal it (the reveal is audited).
pub async fn reveal_secret(pool: &PgPool, access: &Access, id: EndpointId) -> AppResult<String> {
    access.require(Action::RevealSecret)?;
    let (secret, _) = endpoints::secrets(pool, access, id).await?;
    let target = format!("endpoint #{id}");
    audit::record(
        pool,
        access,
        "secret.reveal",
        &target,
        serde_json::json!({}),
    )
    .await?;
    Ok(secret)
}
