//! The team: members, invitations by one-time link, removal. Changes are audited in
//! the transaction that makes them.

use crate::core::ProjectId;
use sqlx::PgPool;

use crate::{
    auth::Access,
    core::{ids::new_token, limits::Limit, permissions::Action},
    db::{
        audit, invitations, invitations::OpenInvitation, limits, memberships, users, users::User,
    },
    error::{AppError, AppResult},
    model::Member,
};

pub async fn members(pool: &PgPool, access: &Access) -> AppResult<Vec<Member>> {
    access.require(Action::ReadTeam)?;
    memberships::list(pool, access.project_id).await
}

/// Invites `email` as a member; returns the one-time token of the invitation's link.
pub async fn invite(pool: &PgPool, access: &Access, email: &str) -> AppResult<String> {
    access.require(Action::ManageTeam)?;
    let email = email.trim().to_lowercase();
    if !email.contains('@') || email.len() > 200 {
        return Err(AppError::Invalid("Enter an email address.".into()));
    }
    let token = new_token();
    let mut tx = pool.begin().await?;
    limits::admit(&mut tx, access.project_id, Limit::Members, 1).await?;
    invitations::create(&mut *tx, access, &token, &email).await?;
    audit::record(
        &mut *tx,
        access,
        "member.invite",
        &email,
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(token)
}

/// Removes a member; the last owner of a project cannot be removed.
pub async fn remove_member(pool: &PgPool, access: &Access, email: &str) -> AppResult<()> {
    access.require(Action::ManageTeam)?;
    let mut tx = pool.begin().await?;
    let members = memberships::lock_all(&mut tx, access.project_id).await?;
    let target = members
        .iter()
        .find(|m| m.email == email.trim().to_lowercase())
        .ok_or(AppError::NotFound)?;
    if target.role == "owner" && members.iter().filter(|m| m.role == "owner").count() == 1 {
        return Err(AppError::Conflict(
            "The last owner of a project cannot be removed.".into(),
        ));
    }
    memberships::remove(&mut tx, access.project_id, target.user_id).await?;
    audit::record(
        &mut *tx,
        access,
        "member.remove",
        email,
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Makes a member an owner or an owner a member. The last owner stays one: a project
/// always has someone who can manage its team.
pub async fn set_role(pool: &PgPool, access: &Access, email: &str, role: &str) -> AppResult<()> {
    access.require(Action::ManageTeam)?;
    if !matches!(role, "owner" | "member") {
        return Err(AppError::Invalid("A role is owner or member.".into()));
    }
    let mut tx = pool.begin().await?;
    let members = memberships::lock_all(&mut tx, access.project_id).await?;
    let email = email.trim().to_lowercase();
    let target = members
        .iter()
        .find(|m| m.email == email)
        .ok_or(AppError::NotFound)?;
    if target.role == role {
        return Ok(());
    }
    if target.role == "owner" && members.iter().filter(|m| m.role == "owner").count() == 1 {
        return Err(AppError::Conflict(
            "The last owner of a project stays an owner: make someone else an owner first.".into(),
        ));
    }
    memberships::set_role(&mut tx, access.project_id, target.user_id, role).await?;
    audit::record(
        &mut *tx,
        access,
        "member.role",
        &email,
        serde_json::json!({ "from": target.role, "to": role }),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

fn unknown_invitation() -> AppError {
    AppError::Invalid("This invitation is unknown, used or expired.".into())
}

/// What an invitation link offers, while it is open.
pub async fn invitation(pool: &PgPool, token: &str) -> AppResult<OpenInvitation> {
    invitations::find_open(pool, token)
        .await?
        .ok_or_else(unknown_invitation)
}

/// Who accepts an invitation: the signed-in account, or a new one with this password hash.
enum Joining {
    As(User),
    New(String),
}

fn account_exists() -> AppError {
    AppError::Conflict(
        "An account with this e-mail exists: sign in to accept the invitation.".into(),
    )
}

/// Accepts an invitation once; returns the user who joined and the project. A new
/// account is made with the password given; an existing account joins only when
/// `signed_in` is that account: the invitation path never checks an existing account's
/// password, so it cannot be used to guess one. The account, the invitation's use and
/// the membership commit together: when another caller made the account first, this
/// one is refused and its invitation stays open for signing in.
pub async fn accept(
    pool: &PgPool,
    token: &str,
    signed_in: Option<&User>,
    password: Option<String>,
) -> AppResult<(User, i64)> {
    let email = invitation(pool, token).await?.email;
    let joining = match users::find_by_email(pool, &email).await? {
        Some(existing) if signed_in.map(|u| u.id) == Some(existing.id) => Joining::As(existing),
        Some(_) => {
            return Err(AppError::Unauthorized(format!(
                "{email} already has an account: sign in as {email}, then open this link again."
            )));
        }
        // Hashed before the transaction opens: it takes a while.
        None => Joining::New(users::make_hash(&password.unwrap_or_default()).await?),
    };
    let mut tx = pool.begin().await?;
    let user = match joining {
        Joining::As(user) => user,
        Joining::New(hash) => users::create(&mut *tx, &email, &hash, "user")
            .await?
            .ok_or_else(account_exists)?,
    };
    let (project_id, role) = invitations::take(&mut tx, token)
        .await?
        .ok_or_else(unknown_invitation)?;
    memberships::add(&mut tx, ProjectId::new(project_id), user.id, &role).await?;
    tx.commit().await?;
    Ok((user, project_id))
}

/// Changes a user's password once the current one is right (a wrong one stays counted
/// against `guess`, as at sign-in); returns the new session epoch, which ends every other
/// session of the user.
pub async fn change_password(
    pool: &PgPool,
    user: &User,
    guess: crate::auth::Guess,
    current: &str,
    new_password: &str,
) -> AppResult<i32> {
    if !users::check_password(current, &user.password_hash).await? {
        return Err(AppError::Invalid("The current password is wrong.".into()));
    }
    crate::auth::guess_was_right(pool, guess).await?;
    users::set_password(pool, user.id, new_password).await
}
