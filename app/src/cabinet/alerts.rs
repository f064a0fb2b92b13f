//! The alert settings on the endpoints page: the threshold, the e-mail opt-in, and the
//! project's latest notices.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlertsView {
    pub failing_after_minutes: i64,
    /// The signed-in member gets the alerts by e-mail.
    pub email_alerts: bool,
    /// Alert e-mail is configured on this server (`POSTHORN_SMTP_URL`).
    pub mail_configured: bool,
    /// The operations endpoint's URL, if one is chosen.
    pub ops_endpoint: Option<String>,
    /// The latest notices as HTML, escaped on the server (see `core::alerts`).
    pub recent_html: String,
}

#[server(endpoint = "alert_settings")]
pub async fn alert_settings() -> Result<AlertsView, ServerFnError> {
    use crate::{
        auth::current_access,
        components::widgets::{absolute, relative},
        core::{alerts::notices_table, permissions::Action},
        ctx::server_ctx,
        db::{notices, projects},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadEndpoints).await?;
    let seconds = notices::failing_after(&ctx.pool, access.project_id).await?;
    let now = chrono::Utc::now();
    let recent: Vec<(String, serde_json::Value, String, String)> =
        notices::recent(&ctx.pool, access.project_id, 10)
            .await?
            .into_iter()
            .map(|(kind, data, at)| (kind, data.0, relative(at, now), absolute(at)))
            .collect();
    Ok(AlertsView {
        failing_after_minutes: (seconds / 60).max(1),
        email_alerts: notices::email_alerts(&ctx.pool, access.project_id, access.user_id).await?,
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
    let access = current_access(Action::ReadEndpoints).await?;
    let current = notices::failing_after(&ctx.pool, access.project_id).await? / 60;
    if minutes != current.max(1) {
        crate::ops::alerts::set_failing_after(&ctx.pool, &access, minutes).await?;
    }
    crate::ops::alerts::set_email_alerts(&ctx.pool, &access, email).await?;
    Ok(())
}
