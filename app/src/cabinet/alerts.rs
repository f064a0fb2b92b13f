//! The alert settings on the endpoints page: the threshold, the e-mail opt-in, and the
//! project's latest notices.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoticeLine {
    pub kind: String,
    pub summary: String,
    pub at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlertsView {
    pub failing_after_minutes: i64,
    /// The signed-in member gets the alerts by e-mail.
    pub email_alerts: bool,
    /// Alert e-mail is configured on this server (`POSTHORN_SMTP_URL`).
    pub mail_configured: bool,
    /// The operations endpoint's URL, if one is chosen.
    pub ops_endpoint: Option<String>,
    pub recent: Vec<NoticeLine>,
}

#[server(endpoint = "alert_settings")]
pub async fn alert_settings() -> Result<AlertsView, ServerFnError> {
    use crate::{
        auth::current_access,
        core::{alerts::summary, permissions::Action},
        ctx::server_ctx,
        db::{notices, projects},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadEndpoints).await?;
    let seconds = notices::failing_after(&ctx.pool, access.project_id).await?;
    let recent = notices::recent(&ctx.pool, access.project_id, 10)
        .await?
        .into_iter()
        .map(|(kind, data, at)| NoticeLine {
            summary: summary(&kind, &data.0),
            kind,
            at,
        })
        .collect();
    Ok(AlertsView {
        failing_after_minutes: (seconds / 60).max(1),
        email_alerts: notices::email_alerts(&ctx.pool, access.project_id, access.user_id).await?,
        mail_configured: ctx.cfg.smtp_url.is_some(),
        // No endpoint has id 0: the operations endpoint itself, whichever it is.
        ops_endpoint: projects::ops_target(&ctx.pool, access.project_id, 0)
            .await?
            .map(|(_, url)| url),
        recent,
    })
}

#[server(endpoint = "set_failing_alert")]
pub async fn set_failing_alert(minutes: i64) -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::SetOpsEndpoint).await?;
    crate::ops::alerts::set_failing_after(&ctx.pool, &access, minutes).await?;
    Ok(())
}

#[server(endpoint = "set_email_alerts")]
pub async fn set_email_alerts(on: bool) -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadEndpoints).await?;
    crate::ops::alerts::set_email_alerts(&ctx.pool, &access, on).await?;
    Ok(())
}
