//! Who may do what: every use case names its [`Action`], and [`allows`] is the one
//! table that decides. Support staff read every project and may Retry and Redirect
//! (bulk replay included: it is Retry at scale); they never change a tenant's
//! endpoints, secrets, keys or team.

#[cfg(feature = "ssr")]
use crate::core::{ProjectId, UserId};
use serde::{Deserialize, Serialize};

/// A caller's standing in one project.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Made the project or was promoted: everything, the team included.
    Owner,
    /// Joined by invitation: everything but the team.
    Member,
    /// Posthorn's support staff: read, Retry, Redirect.
    Support,
    /// The project's own API key, the command line, maintenance.
    System,
    /// A portal user the operator signed in as `owner` or `member`: the project's
    /// endpoints and deliveries, never its keys, team, audit or operations settings
    /// (nothing that would outlive the operator's control).
    Portal,
    /// A portal user who reads deliveries, endpoints and the catalogue, and changes nothing.
    Viewer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    ReadDeliveries,
    Retry,
    Redirect,
    Replay,
    ReadEndpoints,
    CreateEndpoint,
    EditEndpoint,
    DeleteEndpoint,
    TestSend,
    RevealSecret,
    RotateSecret,
    EditCustomHeaders,
    SetOpsEndpoint,
    ReadKeys,
    ManageKeys,
    ReadAudit,
    ReadCatalogue,
    ReadTeam,
    ManageTeam,
    SendEvents,
    /// Erase data by subject or by event: the project's owners, members and API keys.
    EraseData,
    /// Set or remove an event type's schema, which every event of the project's ingest
    /// passes: the project's owners, members and API keys, never a portal user (one
    /// customer's endpoints are theirs, the platform's ingest is not).
    EditSchemas,
}

impl Action {
    /// Every action, for tests that walk the table.
    pub const ALL: [Action; 22] = [
        Action::ReadDeliveries,
        Action::Retry,
        Action::Redirect,
        Action::Replay,
        Action::ReadEndpoints,
        Action::CreateEndpoint,
        Action::EditEndpoint,
        Action::DeleteEndpoint,
        Action::TestSend,
        Action::RevealSecret,
        Action::RotateSecret,
        Action::EditCustomHeaders,
        Action::SetOpsEndpoint,
        Action::ReadKeys,
        Action::ManageKeys,
        Action::ReadAudit,
        Action::ReadCatalogue,
        Action::ReadTeam,
        Action::ManageTeam,
        Action::SendEvents,
        Action::EraseData,
        Action::EditSchemas,
    ];

    /// How a refusal reads to the person refused.
    pub fn describe(self) -> &'static str {
        match self {
            Action::ReadDeliveries => "read deliveries",
            Action::Retry => "retry deliveries",
            Action::Redirect => "redirect deliveries",
            Action::Replay => "replay deliveries",
            Action::ReadEndpoints => "read endpoints",
            Action::CreateEndpoint => "create endpoints",
            Action::EditEndpoint => "change endpoints",
            Action::DeleteEndpoint => "delete endpoints",
            Action::TestSend => "send test events",
            Action::RevealSecret => "see endpoint secrets",
            Action::RotateSecret => "rotate secrets",
            Action::EditCustomHeaders => "change custom headers",
            Action::SetOpsEndpoint => "choose the ops endpoint",
            Action::ReadKeys => "read API keys",
            Action::ManageKeys => "manage API keys",
            Action::ReadAudit => "read the audit log",
            Action::ReadCatalogue => "read the event catalogue",
            Action::ReadTeam => "read the team",
            Action::ManageTeam => "manage the team",
            Action::SendEvents => "send events",
            Action::EraseData => "erase data",
            Action::EditSchemas => "change event type schemas",
        }
    }
}

/// The table: may `role` perform `action` in a project it can see?
pub fn allows(role: Role, action: Action) -> bool {
    use Action::*;
    match role {
        Role::Owner | Role::System => true,
        Role::Member => !matches!(action, ManageTeam),
        Role::Portal => matches!(
            action,
            ReadDeliveries
                | Retry
                | Redirect
                | Replay
                | ReadEndpoints
                | CreateEndpoint
                | EditEndpoint
                | DeleteEndpoint
                | TestSend
                | RevealSecret
                | RotateSecret
                | EditCustomHeaders
                | ReadCatalogue
        ),
        Role::Viewer => matches!(action, ReadDeliveries | ReadEndpoints | ReadCatalogue),
        Role::Support => matches!(
            action,
            ReadDeliveries
                | Retry
                | Redirect
                | Replay
                | ReadEndpoints
                | ReadAudit
                | ReadCatalogue
                | ReadTeam
        ),
    }
}

/// Proof that `user_id` may act on `project_id` in the role it names. Only
/// [`crate::auth::authorize`] (for a signed-in user) and [`crate::auth::system_access`]
/// (for the API key, the command line and tests, which speak for the project itself)
/// make one. Here, below both `auth` and `db`, so that either may name it.
#[cfg(feature = "ssr")]
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Access {
    pub user_id: UserId,
    pub email: String,
    pub is_support: bool,
    pub role: Role,
    pub project_id: ProjectId,
}

#[cfg(feature = "ssr")]
impl Access {
    /// Refuses (403) an action the table does not give this role.
    pub fn require(&self, action: Action) -> crate::error::AppResult<()> {
        if allows(self.role, action) {
            Ok(())
        } else {
            Err(crate::error::AppError::Forbidden(format!(
                "Your role cannot {}.",
                action.describe()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_reads_retries_and_redirects_only() {
        let allowed: Vec<Action> = Action::ALL
            .into_iter()
            .filter(|a| allows(Role::Support, *a))
            .collect();
        for a in [
            Action::Retry,
            Action::Redirect,
            Action::Replay,
            Action::ReadDeliveries,
        ] {
            assert!(allowed.contains(&a), "{a:?}");
        }
        for a in [
            Action::CreateEndpoint,
            Action::EditEndpoint,
            Action::DeleteEndpoint,
            Action::TestSend,
            Action::RevealSecret,
            Action::RotateSecret,
            Action::EditCustomHeaders,
            Action::SetOpsEndpoint,
            Action::ReadKeys,
            Action::ManageKeys,
            Action::ManageTeam,
            Action::SendEvents,
            Action::EraseData,
            Action::EditSchemas,
        ] {
            assert!(!allows(Role::Support, a), "{a:?}");
        }
    }

    #[test]
    fn portal_users_never_reach_keys_team_audit_or_operations() {
        for role in [Role::Portal, Role::Viewer] {
            for a in [
                Action::ReadKeys,
                Action::ManageKeys,
                Action::ReadAudit,
                Action::ReadTeam,
                Action::ManageTeam,
                Action::SetOpsEndpoint,
                Action::SendEvents,
                Action::EraseData,
                Action::EditSchemas,
            ] {
                assert!(!allows(role, a), "{role:?} {a:?}");
            }
        }
        let viewer: Vec<Action> = Action::ALL
            .into_iter()
            .filter(|a| allows(Role::Viewer, *a))
            .collect();
        assert_eq!(
            viewer,
            [
                Action::ReadDeliveries,
                Action::ReadEndpoints,
                Action::ReadCatalogue
            ]
        );
        assert!(allows(Role::Portal, Action::Retry));
        assert!(allows(Role::Portal, Action::RotateSecret));
    }

    #[test]
    fn members_do_everything_but_manage_the_team() {
        for a in Action::ALL {
            assert_eq!(allows(Role::Member, a), a != Action::ManageTeam, "{a:?}");
            assert!(allows(Role::Owner, a));
        }
    }
}
