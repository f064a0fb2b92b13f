//! The alert settings on the endpoints page: the threshold, the e-mail opt-in and its
//! confirmation, the project's alert addresses, and its latest notices; and the page a
//! confirmation link opens.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlertsView {
    pub failing_after_minutes: i64,
    /// The signed-in member asked for the alerts by e-mail.
    pub email_alerts: bool,
    /// The address they go to, and whether it is confirmed (alerts wait until it is).
    pub address: Option<(String, bool)>,
    /// The project's alert addresses as HTML, escaped on the server (see `core::alerts`).
    pub addresses_html: String,
    /// Alert e-mail is configured on this server (`POSTHORN_SMTP_URL`).
    pub mail_configured: bool,
    /// The operations endpoint's URL, if one is chosen.
    pub ops_endpoint: Option<String>,
    /// The latest notices as HTML, escaped on the server (see `core::alerts`).
    pub recent_html: String,
}

/// Said where alert e-mail is asked for on a server that sends none.
pub const MAIL_OFF: &str = "E-mail is off on this server (its operator turns it on with \
     POSTHORN_SMTP_URL): alerts go to the operations endpoint only.";

#[server(endpoint = "alert_settings")]
pub async fn alert_settings() -> Result<AlertsView, ServerFnError> {
    use crate::{
        auth::current_access,
        components::widgets::{absolute, relative},
        core::{
            alerts::{addresses_table, notices_table, AddressRow},
            permissions::Action,
        },
        ctx::server_ctx,
        db::{alert_recipients, notices, projects},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadTeam).await?;
    let seconds = notices::failing_after(&ctx.pool, access.project_id).await?;
    let now = chrono::Utc::now();
    let recent: Vec<(String, serde_json::Value, String, String)> =
        notices::recent(&ctx.pool, access.project_id, 10)
            .await?
            .into_iter()
            .map(|(kind, data, at)| (kind, data.0, relative(at, now), absolute(at)))
            .collect();
    let addresses: Vec<AddressRow> = alert_recipients::list(&ctx.pool, access.project_id)
        .await?
        .into_iter()
        .map(|a| AddressRow {
            email: a.email,
            confirmed: a.confirmed,
            failed: a
                .failed_at
                .map(|at| (relative(at, now), absolute(at), a.reply.unwrap_or_default())),
        })
        .collect();
    let email_alerts = notices::email_alerts(&ctx.pool, access.project_id, access.user_id).await?;
    let address = if email_alerts {
        alert_recipients::of_member(&ctx.pool, access.project_id, access.user_id).await?
    } else {
        None
    };
    Ok(AlertsView {
        failing_after_minutes: (seconds / 60).max(1),
        email_alerts,
        address,
        addresses_html: addresses_table(&addresses),
        mail_configured: ctx.cfg.smtp_url.is_some(),
        // No endpoint has id 0: the operations endpoint itself, whichever it is.
        ops_endpoint: projects::ops_target(&ctx.pool, access.project_id, 0)
            .await?
            .map(|(_, url)| url),
        recent_html: notices_table(&recent),
    })
}

/// Saves the alert form: the project's threshold (only if it changed: support may not
/// change it) and the signed-in member's own e-mail choice.
#[server(endpoint = "save_alert_settings")]
pub async fn save_alert_settings(minutes: i64, email: bool) -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, db::notices};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadTeam).await?;
    let current = notices::failing_after(&ctx.pool, access.project_id).await? / 60;
    if minutes != current.max(1) {
        crate::use_cases::alerts::set_failing_after(&ctx.pool, &access, minutes).await?;
    }
    // Turning e-mail on where none can be sent would only leave a confirmation waiting.
    // (Support staff, no project's members, are told that first, by the use case.)
    if email
        && !access.is_support
        && ctx.cfg.smtp_url.is_none()
        && !notices::email_alerts(&ctx.pool, access.project_id, access.user_id).await?
    {
        return Err(crate::error::AppError::Conflict(MAIL_OFF.into()).into());
    }
    crate::use_cases::alerts::set_email_alerts(&ctx.pool, &access, email).await?;
    Ok(())
}

/// Mails the signed-in member's alert address a new confirmation link.
#[server(endpoint = "resend_alert_confirmation")]
pub async fn resend_alert_confirmation() -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadTeam).await?;
    crate::use_cases::alerts::send_confirmation_again(&ctx.pool, &access).await?;
    Ok(())
}

/// What a confirmation link confirms, before it is used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AddressToConfirm {
    pub project: String,
    pub email: String,
}

#[server(endpoint = "alert_address_to_confirm")]
pub async fn alert_address_to_confirm(token: String) -> Result<AddressToConfirm, ServerFnError> {
    use crate::ctx::server_ctx;
    let ctx = server_ctx()?;
    let (project, email) = crate::use_cases::alerts::address_to_confirm(&ctx.pool, &token).await?;
    Ok(AddressToConfirm { project, email })
}

/// Confirms an alert address with its link's token; no sign-in needed. Returns the
/// address.
#[server(endpoint = "confirm_alert_address")]
pub async fn confirm_alert_address(token: String) -> Result<String, ServerFnError> {
    use crate::ctx::server_ctx;
    let ctx = server_ctx()?;
    Ok(crate::use_cases::alerts::confirm_address(&ctx.pool, &token).await?)
}
