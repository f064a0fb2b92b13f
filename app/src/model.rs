//! The shapes that cross from server to page: what server functions return.

use crate::core::{AttemptId, EndpointId, EventId, ProjectId, UserId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::core::status::{DeliveryStatus, ErrorKind, Trigger};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct ProjectRef {
    pub id: ProjectId,
    pub name: String,
    pub plan: String,
}

/// The signed-in user as the pages see them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Viewer {
    pub user_id: UserId,
    pub email: String,
    pub is_support: bool,
    /// A member of the current project by invitation, not one of its owners.
    #[serde(default)]
    pub member: bool,
    pub projects: Vec<ProjectRef>,
    pub current: Option<ProjectRef>,
    /// Endpoints of the current project that Posthorn disabled: (id, url, reason).
    pub disabled_endpoints: Vec<(i64, String, String)>,
    /// Set when the operator signed this browser in through a portal link.
    pub portal: Option<PortalView>,
}

impl Viewer {
    /// A portal `viewer` reads and acts on nothing: its pages show no action buttons.
    pub fn read_only(&self) -> bool {
        self.portal.as_ref().is_some_and(|p| p.role == "viewer")
    }

    /// Whether the pages offer `action` to this viewer (the server decides anyway, from
    /// the same table): support staff are offered no change to a tenant's endpoints,
    /// keys or team, a portal viewer nothing.
    pub fn may(&self, action: crate::core::permissions::Action) -> bool {
        use crate::core::permissions::{allows, Role};
        let role = match &self.portal {
            Some(p) if p.role == "viewer" => Role::Viewer,
            Some(_) => Role::Portal,
            None if self.is_support => Role::Support,
            None if self.member => Role::Member,
            None => Role::Owner,
        };
        allows(role, action)
    }
}

/// A project's brand, as the operator set it (SPEC "Operator API and portal").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Brand {
    #[serde(default)]
    pub name: Option<String>,
    /// `#rrggbb`, checked when set.
    #[serde(default)]
    pub accent: Option<String>,
    /// An https URL, checked when set.
    #[serde(default)]
    pub logo_url: Option<String>,
}

/// What a portal page shows of its session: the brand, and who is signed in as what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PortalView {
    pub brand: Brand,
    /// `owner`, `member` or `viewer`.
    pub role: String,
    /// The portal user's name, email or id, whichever the operator gave first.
    pub user: String,
}

/// One line of the delivery list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct DeliveryRow {
    pub id: AttemptId,
    #[serde(deserialize_with = "crate::core::wire::utc")]
    pub created_at: DateTime<Utc>,
    pub project_id: ProjectId,
    pub request_id: String,
    pub event_id: EventId,
    pub event_type: String,
    pub endpoint_id: EndpointId,
    pub endpoint_url: String,
    pub target_url: String,
    pub attempt: i32,
    pub trigger: Trigger,
    pub triggered_by: Option<String>,
    pub status: DeliveryStatus,
    #[serde(deserialize_with = "crate::core::wire::utc")]
    pub scheduled_at: DateTime<Utc>,
    #[serde(default, deserialize_with = "crate::core::wire::utc_opt")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "crate::core::wire::utc_opt")]
    pub finished_at: Option<DateTime<Utc>>,
    pub duration_ms: Option<i32>,
    pub response_status: Option<i16>,
    pub error_kind: Option<ErrorKind>,
    pub error: Option<String>,
    /// The event's ordering key.
    pub ordering_key: Option<String>,
    /// While this attempt waits its turn in its key's lane: the event right ahead of it.
    pub waits_for: Option<String>,
    /// The error in words for people (the dashboard's rows; the API leaves it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub explained: Option<String>,
}

impl DeliveryRow {
    /// Fills in `explained` from the error, the code and the status.
    pub fn explain(mut self) -> Self {
        self.explained = crate::core::explain::explain(
            self.error_kind,
            self.error.as_deref(),
            self.response_status,
            self.status,
        );
        self
    }

    /// [`Self::explain`] for a line of the list, which does not know what followed: a
    /// failed attempt says what happened only (its row in the list, or its detail, says
    /// what came next).
    pub fn explain_listed(self) -> Self {
        if self.status != DeliveryStatus::Failed {
            return self.explain();
        }
        let mut row = self;
        row.explained = row.what_happened();
        row
    }

    fn what_happened(&self) -> Option<String> {
        crate::core::explain::what_happened(
            self.error_kind,
            self.error.as_deref(),
            self.response_status,
        )
    }

    /// [`Self::explain`], told the other attempts of its event to its endpoint: a failed
    /// attempt that a later one followed says how that one went, not that one will come.
    pub fn explain_among(self, attempts: &[DeliveryRow]) -> Self {
        let next = attempts
            .iter()
            .filter(|a| a.attempt > self.attempt)
            .min_by_key(|a| a.attempt);
        match (self.status, next) {
            (DeliveryStatus::Failed, Some(next)) => {
                let followed = crate::core::explain::what_followed(next.attempt, next.status);
                let mut row = self;
                row.explained = row.what_happened().map(|w| format!("{w} {followed}"));
                row
            }
            _ => self.explain(),
        }
    }
}

/// An expanded row: everything about one attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliveryDetail {
    pub row: DeliveryRow,
    pub payload: String,
    pub request_headers: Vec<(String, String)>,
    pub response_headers: Vec<(String, String)>,
    pub response_body: Option<String>,
    /// When the event's data was erased, and by which erasure.
    #[serde(default, deserialize_with = "crate::core::wire::utc_and_id_opt")]
    pub erased: Option<(DateTime<Utc>, i64)>,
    /// All attempts of the same event to the same endpoint, oldest first.
    pub attempts: Vec<DeliveryRow>,
    pub curl: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryPage {
    pub rows: Vec<DeliveryRow>,
    /// Cursor for the next (older) page, when there is one.
    pub next: Option<String>,
    /// How many days of history there are (`POSTHORN_RETENTION_DAYS`).
    pub retention_days: u32,
    /// The server's time when it read the page: rows after it are retries not yet due,
    /// which the "N new" count leaves out of its anchor.
    #[serde(default, deserialize_with = "crate::core::wire::utc_opt")]
    pub as_of: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct EndpointView {
    pub id: EndpointId,
    pub project_id: ProjectId,
    pub url: String,
    pub description: String,
    pub event_types: Vec<String>,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    #[serde(deserialize_with = "crate::core::wire::utc")]
    pub created_at: DateTime<Utc>,
    /// Names of the endpoint's custom headers; their values never leave the server.
    pub header_names: Vec<String>,
    /// At most this many attempts per second start to the endpoint (None: unlimited).
    pub rate_limit: Option<i32>,
    /// The client certificate presented to the receiver, by subject and expiry (its key
    /// never leaves the server). Not sent to the browser: the card's certificate block is
    /// built on the server (`components::cert_card`).
    #[serde(skip)]
    pub client_cert_subject: Option<String>,
    #[serde(skip)]
    pub client_cert_not_after: Option<DateTime<Utc>>,
    /// `hmac-sha256` or `ed25519`, and the ed25519 public key (`whpk_…`) once it has one;
    /// shown on the card through the server-built block, so not sent to the browser.
    #[serde(skip)]
    pub signature_scheme: String,
    #[serde(skip)]
    pub public_key: Option<String>,
    /// Its filter (a CEL expression), shown and edited in the card's server-built block.
    #[serde(skip)]
    pub filter: Option<String>,
    /// `http`, or `listen` for a `posthorn listen` session's endpoint (its attempts go to
    /// a developer's machine over the CLI's connection, not to `url`). For the API: the
    /// card shows [`EndpointView::listen`].
    #[serde(skip)]
    pub destination: String,
    /// A broker destination's settings as kept (JSON of `core::destination::Settings`;
    /// None for `http` and `listen`), and whether it has credentials (never read back).
    #[serde(skip)]
    pub destination_settings: Option<String>,
    #[serde(skip)]
    pub credentials_set: bool,
    /// A listen session's `--name` (None: unnamed, or not a listen session).
    #[serde(skip)]
    pub listen_name: Option<String>,
    /// A listen session's CLI is connected now.
    #[serde(skip)]
    pub listen_connected: bool,
    /// A listen session's mark on the card (`laptop · connected`), built into the card's
    /// server-made block, so the browser bundle carries none of it.
    #[serde(skip)]
    pub listen: Option<String>,
}

impl EndpointView {
    pub fn is_listen(&self) -> bool {
        self.destination == "listen"
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct ApiKeyView {
    pub id: i64,
    pub name: String,
    pub prefix: String,
    #[serde(deserialize_with = "crate::core::wire::utc")]
    pub created_at: DateTime<Utc>,
    #[serde(default, deserialize_with = "crate::core::wire::utc_opt")]
    pub last_used_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "crate::core::wire::utc_opt")]
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct BinRequest {
    pub id: i64,
    pub method: String,
    pub path: String,
    pub query: String,
    #[cfg_attr(feature = "ssr", sqlx(json))]
    pub headers: Vec<(String, String)>,
    /// Empty when `truncated`: the body did not come with the list.
    pub body: Vec<u8>,
    pub truncated: bool,
    pub size: i64,
    pub status: i16,
    pub remote_addr: Option<String>,
    #[serde(deserialize_with = "crate::core::wire::utc")]
    pub received_at: DateTime<Utc>,
    /// When its body was erased with its event's data (a Redirect's copy).
    #[serde(default, deserialize_with = "crate::core::wire::utc_opt")]
    pub erased_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct AuditEntry {
    pub id: i64,
    pub actor: String,
    pub action: String,
    pub target: String,
    #[serde(deserialize_with = "crate::core::wire::utc")]
    pub created_at: DateTime<Utc>,
    /// What the action named beyond its target (JSON text; `{}` when nothing).
    pub detail: String,
}

/// A member of a project's team.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct Member {
    pub email: String,
    pub role: String,
    #[serde(deserialize_with = "crate::core::wire::utc")]
    pub since: DateTime<Utc>,
}

/// A bulk replay's state, polled by the page while it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayProgress {
    pub id: i64,
    pub total: i32,
    /// Attempts enqueued so far.
    pub queued: i32,
    /// Of those, attempts with an outcome.
    pub finished: i32,
    pub status: String,
    pub per_second: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::status::{DeliveryStatus as S, ErrorKind};

    fn attempt(n: i32, status: S) -> DeliveryRow {
        let at = chrono::Utc::now();
        DeliveryRow {
            id: AttemptId::new(n.into()),
            created_at: at,
            project_id: ProjectId::new(1),
            request_id: format!("req_{n}"),
            event_id: EventId::from("evt_1"),
            event_type: "order.paid".into(),
            endpoint_id: EndpointId::new(1),
            endpoint_url: "https://example.com".into(),
            target_url: "https://example.com".into(),
            attempt: n,
            trigger: Trigger::Auto,
            triggered_by: None,
            status,
            scheduled_at: at,
            started_at: Some(at),
            finished_at: Some(at),
            duration_ms: Some(5),
            response_status: (status == S::Failed).then_some(503),
            error_kind: (status == S::Failed).then_some(ErrorKind::HttpStatus),
            error: (status == S::Failed).then(|| "endpoint answered 503".into()),
            ordering_key: None,
            waits_for: None,
            explained: None,
        }
    }

    #[test]
    fn a_failed_attempt_says_what_followed_it() {
        let failed = attempt(1, S::Failed);
        let alone = failed.clone().explain_among(std::slice::from_ref(&failed));
        assert!(alone
            .explained
            .unwrap()
            .ends_with("Posthorn retries it on its schedule."));
        // The list's line says what happened, not what it cannot know came next.
        assert_eq!(
            failed.clone().explain_listed().explained.unwrap(),
            "The endpoint answered 503 Service Unavailable."
        );
        for (next, says) in [
            (S::Succeeded, "Attempt 2 succeeded."),
            (S::Pending, "Attempt 2 is scheduled."),
            (
                S::DeadLetter,
                "Attempt 2 failed too, with no more automatic tries.",
            ),
        ] {
            let chain = [failed.clone(), attempt(2, next), attempt(3, S::Succeeded)];
            let e = failed.clone().explain_among(&chain).explained.unwrap();
            assert_eq!(
                e,
                format!("The endpoint answered 503 Service Unavailable. {says}")
            );
        }
    }
}
