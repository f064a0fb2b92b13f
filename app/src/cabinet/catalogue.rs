//! The audit log and the event catalogue.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::AuditEntry;

#[server(endpoint = "list_audit")]
pub async fn list_audit() -> Result<Vec<AuditEntry>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, db::audit};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadAudit).await?;
    Ok(audit::list(&ctx.pool, &access, 500).await?)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventTypeInfo {
    pub event_type: String,
    pub count_14d: i64,
    #[serde(default, deserialize_with = "crate::core::wire::utc_opt")]
    pub last_seen: Option<DateTime<Utc>>,
    pub example: Option<String>,
    pub documented: Option<String>,
}

/// The platform's documented event types.
pub const DOCUMENTED_TYPES: [(&str, &str); 7] = [
    (
        "message.created",
        "A message was sent or received in a chat.",
    ),
    ("chat.opened", "A visitor opened a new chat."),
    ("contact.created", "A new contact was added."),
    (
        "payment.confirmed",
        "A payment was authorised by the provider.",
    ),
    ("payment.succeeded", "A payment was captured."),
    ("subscription.cancelled", "A subscription was cancelled."),
    ("test.ping", "A test event sent from the cabinet."),
];

#[server(endpoint = "event_catalogue")]
pub async fn event_catalogue() -> Result<Vec<EventTypeInfo>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadCatalogue).await?;
    let days =
        crate::db::projects::window_days(&ctx.pool, access.project_id, ctx.cfg.retention_days)
            .await?;
    let seen = crate::db::events::types_seen(&ctx.pool, access.project_id, days).await?;
    let mut out: Vec<EventTypeInfo> = seen
        .into_iter()
        .map(|(t, n, last, ex)| EventTypeInfo {
            documented: DOCUMENTED_TYPES
                .iter()
                .find(|d| d.0 == t)
                .map(|d| d.1.to_string()),
            event_type: t,
            count_14d: n,
            last_seen: last,
            example: ex,
        })
        .collect();
    use crate::core::alerts;
    for (t, doc) in DOCUMENTED_TYPES.into_iter().chain(alerts::NOTICES) {
        if let Some(e) = out.iter_mut().find(|e| e.event_type == t) {
            e.documented = Some(doc.into());
        } else {
            out.push(EventTypeInfo {
                event_type: t.into(),
                count_14d: 0,
                last_seen: None,
                example: None,
                documented: Some(doc.into()),
            });
        }
    }
    // Notices nobody has received yet still show what they carry.
    for e in &mut out {
        if e.example.is_none() {
            e.example = alerts::example(&e.event_type)
                .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default());
        }
    }
    Ok(out)
}
