//! The team: members, invitations by one-time link, password changes.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub email: String,
    pub role: String,
    pub since: DateTime<Utc>,
}

#[server(endpoint = "list_members")]
pub async fn list_members() -> Result<Vec<Member>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadTeam).await?;
    let rows: Vec<(String, String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT u.email, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.project_id = $1 ORDER BY m.created_at",
    )
    .bind(access.project_id)
    .fetch_all(&ctx.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(email, role, since)| Member { email, role, since })
        .collect())
}

/// Changes the signed-in user's password: guessed at no faster than sign-in allows,
/// and every other session of the user ends (this one continues under a new id).
#[server(endpoint = "change_password")]
pub async fn change_password(current: String, new_password: String) -> Result<(), ServerFnError> {
    use crate::{
        auth::{count_guess, guess_was_right, require_user, session, sign_in},
        ctx::server_ctx,
        db::users,
        error::AppError,
    };
    let ctx = server_ctx()?;
    let user = require_user().await?;
    let guess = count_guess(&ctx.pool, "password", &user.id.to_string()).await?;
    if !users::check_password(&current, &user.password_hash).await? {
        return Err(AppError::Invalid("The current password is wrong.".into()).into());
    }
    guess_was_right(&ctx.pool, guess).await?;
    let epoch = users::set_password(&ctx.pool, user.id, &new_password).await?;
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
    use crate::{
        auth::current_access, core::ids::new_token, core::permissions::Action, ctx::server_ctx,
        db::audit, error::AppError,
    };
    use sha2::{Digest, Sha256};
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageTeam).await?;
    let email = email.trim().to_lowercase();
    if !email.contains('@') || email.len() > 200 {
        return Err(AppError::Invalid("Enter an email address.".into()).into());
    }
    let token = new_token();
    sqlx::query(
        "INSERT INTO invitations (token_hash, project_id, email, role, created_by, expires_at)
         VALUES ($1, $2, $3, 'member', $4, now() + interval '7 days')",
    )
    .bind(Sha256::digest(token.as_bytes()).to_vec())
    .bind(access.project_id)
    .bind(&email)
    .bind(access.user_id)
    .execute(&ctx.pool)
    .await?;
    audit::record(
        &ctx.pool,
        &access,
        "member.invite",
        &email,
        serde_json::json!({}),
    )
    .await?;
    Ok(format!("{}/invite/{token}", ctx.cfg.public_url))
}

/// Removes a member; the last owner of a project cannot be removed.
#[server(endpoint = "remove_member")]
pub async fn remove_member(email: String) -> Result<(), ServerFnError> {
    use crate::{
        auth::current_access, core::permissions::Action, ctx::server_ctx, db::audit,
        error::AppError,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageTeam).await?;
    let mut tx = ctx.pool.begin().await?;
    // Lock the project's memberships so two removals cannot both pass the check.
    let members: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT m.user_id, lower(u.email), m.role FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.project_id = $1 FOR UPDATE OF m",
    )
    .bind(access.project_id)
    .fetch_all(&mut *tx)
    .await?;
    let target = members
        .iter()
        .find(|m| m.1 == email.trim().to_lowercase())
        .ok_or(AppError::NotFound)?;
    if target.2 == "owner" && members.iter().filter(|m| m.2 == "owner").count() == 1 {
        return Err(
            AppError::Conflict("The last owner of a project cannot be removed.".into()).into(),
        );
    }
    sqlx::query("DELETE FROM memberships WHERE project_id = $1 AND user_id = $2")
        .bind(access.project_id)
        .bind(target.0)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    audit::record(
        &ctx.pool,
        &access,
        "member.remove",
        &email,
        serde_json::json!({}),
    )
    .await?;
    Ok(())
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
    use crate::{auth::current_user, ctx::server_ctx, error::AppError};
    use sha2::{Digest, Sha256};
    let ctx = server_ctx()?;
    let row: Option<(String, String, bool)> = sqlx::query_as(
        "SELECT p.name, i.email, EXISTS (SELECT 1 FROM users u WHERE lower(u.email) = i.email)
         FROM invitations i JOIN projects p ON p.id = i.project_id
         WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > now()",
    )
    .bind(Sha256::digest(token.as_bytes()).to_vec())
    .fetch_optional(&ctx.pool)
    .await?;
    let (project, email, has_account) = row
        .ok_or_else(|| AppError::Invalid("This invitation is unknown, used or expired.".into()))?;
    let signed_in_as_invitee = current_user()
        .await?
        .is_some_and(|u| u.email.eq_ignore_ascii_case(&email));
    Ok(InvitationView {
        project,
        email,
        has_account,
        signed_in_as_invitee,
    })
}

/// Accepts an invitation once and joins the project. A new account is made with the
/// password given; an existing account joins only from a session signed in as that
/// account: the invitation path never checks an existing account's password, so it
/// cannot be used to guess one.
#[server(endpoint = "accept_invitation")]
pub async fn accept_invitation(
    token: String,
    password: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{
        auth::{current_user, internal, session, sign_in, PROJECT_KEY},
        ctx::server_ctx,
        db::{projects, users},
        error::AppError,
    };
    use sha2::{Digest, Sha256};
    let ctx = server_ctx()?;
    let unknown = || AppError::Invalid("This invitation is unknown, used or expired.".into());
    let token_hash = Sha256::digest(token.as_bytes()).to_vec();
    let email: String = sqlx::query_scalar(
        "SELECT email FROM invitations WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()",
    )
    .bind(&token_hash)
    .fetch_optional(&ctx.pool)
    .await?
    .ok_or_else(unknown)?;
    let user = match users::find_by_email(&ctx.pool, &email).await? {
        Some(existing) => {
            let signed_in = current_user().await?;
            if signed_in.as_ref().map(|u| u.id) != Some(existing.id) {
                return Err(AppError::Unauthorized(format!(
                    "{email} already has an account: sign in as {email}, then open this link again."
                ))
                .into());
            }
            existing
        }
        None => {
            let password = password.unwrap_or_default();
            users::create(&ctx.pool, &email, &password, "user").await?
        }
    };
    let mut tx = ctx.pool.begin().await?;
    let invite: Option<(i64, String)> = sqlx::query_as(
        "UPDATE invitations SET used_at = now()
         WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
         RETURNING project_id, role",
    )
    .bind(&token_hash)
    .fetch_optional(&mut *tx)
    .await?;
    let (project_id, role) = invite.ok_or_else(unknown)?;
    projects::add_member(&mut tx, project_id, user.id, &role).await?;
    tx.commit().await?;
    let session = session().await?;
    sign_in(&session, &user).await?;
    session
        .insert(PROJECT_KEY, project_id)
        .await
        .map_err(internal)?;
    leptos_axum::redirect("/developers");
    Ok(())
}
