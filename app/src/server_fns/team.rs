//! The team: members, invitations by one-time link, password changes.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

pub use crate::model::Member;

#[server(endpoint = "list_members")]
pub async fn list_members() -> Result<Vec<Member>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadTeam).await?;
    Ok(use_cases::team::members(&ctx.pool, &access).await?)
}

/// Changes the signed-in user's password: guessed at no faster than sign-in allows,
/// and every other session of the user ends (this one continues under a new id).
#[server(endpoint = "change_password")]
pub async fn change_password(current: String, new_password: String) -> Result<(), ServerFnError> {
    use crate::{
        auth::{count_guess, require_user, session, sign_in},
        ctx::server_ctx,
        db::users,
        use_cases,
    };
    let ctx = server_ctx()?;
    let user = require_user().await?;
    let guess = count_guess(&ctx.pool, "password", &user.id.to_string()).await?;
    let epoch =
        use_cases::team::change_password(&ctx.pool, &user, guess, &current, &new_password).await?;
    let user = users::User {
        session_epoch: epoch,
        ..user
    };
    sign_in(&session().await?, &user).await?;
    Ok(())
}

/// Invites someone by email; returns the one-time link (no mail server: the owner
/// passes it on). Owners only.
#[server(endpoint = "invite_member")]
pub async fn invite_member(email: String) -> Result<String, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageTeam).await?;
    let token = use_cases::team::invite(&ctx.pool, &access, &email).await?;
    Ok(format!("{}/invite/{token}", ctx.cfg.public_url))
}

/// Removes a member; the last owner of a project cannot be removed.
#[server(endpoint = "remove_member")]
pub async fn remove_member(email: String) -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageTeam).await?;
    Ok(use_cases::team::remove_member(&ctx.pool, &access, &email).await?)
}

/// Makes a member an owner or an owner a member; the last owner stays one. Owners only.
#[server(endpoint = "set_member_role")]
pub async fn set_member_role(email: String, role: String) -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageTeam).await?;
    Ok(use_cases::team::set_role(&ctx.pool, &access, &email, &role).await?)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvitationView {
    pub project: String,
    pub email: String,
    pub has_account: bool,
    /// The visitor is signed in as the invited account (and so may join without a password).
    pub signed_in_as_invitee: bool,
}

#[server(endpoint = "get_invitation")]
pub async fn get_invitation(token: String) -> Result<InvitationView, ServerFnError> {
    use crate::{auth::current_user, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let open = use_cases::team::invitation(&ctx.pool, &token).await?;
    let signed_in_as_invitee = current_user()
        .await?
        .is_some_and(|u| u.email.eq_ignore_ascii_case(&open.email));
    Ok(InvitationView {
        project: open.project,
        email: open.email,
        has_account: open.has_account,
        signed_in_as_invitee,
    })
}

/// Accepts an invitation once and joins the project, signed in as the account that
/// joined (see [`crate::use_cases::team::accept`] for who may).
#[server(endpoint = "accept_invitation")]
pub async fn accept_invitation(
    token: String,
    password: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{
        auth::{current_user, internal, session, sign_in, PROJECT_KEY},
        ctx::server_ctx,
        use_cases,
    };
    let ctx = server_ctx()?;
    let signed_in = current_user().await?;
    let (user, project_id) =
        use_cases::team::accept(&ctx.pool, &token, signed_in.as_ref(), password).await?;
    let session = session().await?;
    sign_in(&session, &user).await?;
    session
        .insert(PROJECT_KEY, project_id)
        .await
        .map_err(internal)?;
    leptos_axum::redirect("/developers");
    Ok(())
}
