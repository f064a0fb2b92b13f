//! The audit log and the event catalogue.

#[cfg(feature = "ssr")]
use crate::core::ProjectId;
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
    /// Its JSON Schema, shown and offered for download, as HTML built on the server
    /// (empty: none).
    pub schema_html: String,
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
            schema_html: String::new(),
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
                schema_html: String::new(),
            });
        }
    }
    for s in crate::db::schemas::list(&ctx.pool, access.project_id).await? {
        let html = schema_html(access.project_id, &s);
        match out.iter_mut().find(|e| e.event_type == s.event_type) {
            Some(e) => e.schema_html = html,
            None => out.push(EventTypeInfo {
                event_type: s.event_type.clone(),
                count_14d: 0,
                last_seen: None,
                example: None,
                documented: None,
                schema_html: html,
            }),
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

/// A type's schema in the catalogue: its version, the schema itself (folded), and a
/// download link (served by the server, for signed-in users of the project).
#[cfg(feature = "ssr")]
fn schema_html(project_id: ProjectId, s: &crate::db::schemas::StoredSchema) -> String {
    use crate::core::alerts::escape_html;
    let pretty = crate::core::text::indent_json(&s.schema).unwrap_or_else(|| s.schema.clone());
    let t: String = url::form_urlencoded::byte_serialize(s.event_type.as_bytes()).collect();
    format!(
        "<details data-testid=\"event-schema\"><summary>schema v{}</summary><pre class=\"code\">{}</pre>\
         </details> <a href=\"/developers/events/schema/{t}?project={project_id}\" download=\"{}.schema.json\" \
         data-testid=\"download-schema\">download</a>",
        s.version,
        escape_html(&pretty),
        escape_html(&s.event_type),
    )
}
