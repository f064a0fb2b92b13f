//! Alert settings: the project's threshold for `endpoint.failing` (like choosing the
//! operations endpoint, a project setting), and each member's own e-mail opt-in, which
//! takes effect once whoever reads the address confirms it through the link mailed to it.

use crate::core::ProjectId;
use sqlx::{PgConnection, PgPool};

use crate::{
    auth::{system_access, Access},
    core::{alert_mail::confirmation_refused, permissions::Action},
    db::{alert_mails, alert_recipients, audit, notices},
    error::{AppError, AppResult},
};

/// The longest threshold, in minutes (a week).
pub const MAX_FAILING_MINUTES: i64 = 7 * 24 * 60;

pub async fn set_failing_after(pool: &PgPool, access: &Access, minutes: i64) -> AppResult<()> {
    access.require(Action::SetOpsEndpoint)?;
    if !(1..=MAX_FAILING_MINUTES).contains(&minutes) {
        return Err(AppError::Invalid(format!(
            "The alert threshold is between 1 and {MAX_FAILING_MINUTES} minutes."
        )));
    }
    let mut tx = pool.begin().await?;
    notices::set_failing_after(&mut *tx, access.project_id, minutes * 60).await?;
    audit::record(
        &mut *tx,
        access,
        "alerts.failing_after",
        &format!("{minutes} min"),
        serde_json::json!({ "minutes": minutes }),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A member's own choice; support staff, who are not members, have no such choice (and
/// turning off what they never had is no error). The first time a member turns e-mail on,
/// a confirmation goes to the address; alerts follow once it is confirmed.
pub async fn set_email_alerts(pool: &PgPool, access: &Access, on: bool) -> AppResult<()> {
    access.require(Action::ReadEndpoints)?;
    let mut tx = pool.begin().await?;
    let member = notices::set_email_alerts(&mut *tx, access.project_id, access.user_id, on).await?;
    if !member && !on {
        return Ok(());
    }
    if !member {
        return Err(AppError::Invalid(
            "Only the project's members can get its alerts by e-mail.".into(),
        ));
    }
    if on
        && alert_recipients::add(&mut tx, access.project_id, access.user_id, &access.email).await?
    {
        // Over a daily limit the address just waits: "send again" says why.
        let _ = request_confirmation(&mut tx, access).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Mails the member's address a new confirmation link, within the daily limits (see
/// `core::alert_mail`).
pub async fn send_confirmation_again(pool: &PgPool, access: &Access) -> AppResult<()> {
    access.require(Action::ReadEndpoints)?;
    let mut tx = pool.begin().await?;
    let wanted = notices::email_alerts(&mut *tx, access.project_id, access.user_id).await?;
    match alert_recipients::of_member(&mut *tx, access.project_id, access.user_id).await? {
        Some((_, false)) if wanted => {}
        Some((_, true)) if wanted => {
            return Err(AppError::Conflict(
                "Your address is already confirmed.".into(),
            ))
        }
        _ => {
            return Err(AppError::Invalid(
                "Turn on alert e-mail first: the confirmation goes out then.".into(),
            ))
        }
    }
    if let Some(refusal) = request_confirmation(&mut tx, access).await? {
        return Err(AppError::TooMany(refusal));
    }
    tx.commit().await?;
    Ok(())
}

/// Queues a confirmation to the member's address unless a daily limit is reached; the
/// refusal, if one was.
async fn request_confirmation(
    conn: &mut PgConnection,
    access: &Access,
) -> AppResult<Option<String>> {
    alert_mails::lock_confirmations(conn, access.project_id, &access.email).await?;
    let (to_address, for_project) =
        alert_mails::confirmations_today(conn, access.project_id, &access.email).await?;
    if let Some(refusal) = confirmation_refused(to_address, for_project) {
        return Ok(Some(refusal));
    }
    alert_mails::queue_confirmation(conn, access.project_id, access.user_id, &access.email).await?;
    Ok(None)
}

fn unknown_link() -> AppError {
    AppError::Invalid("This confirmation link is unknown, used or expired.".into())
}

/// What an open confirmation link confirms: (project, address).
pub async fn address_to_confirm(pool: &PgPool, token: &str) -> AppResult<(String, String)> {
    alert_recipients::find_open(pool, token)
        .await?
        .ok_or_else(unknown_link)
}

/// Confirms the address behind a link, once; no sign-in is needed, since holding the link
/// is what proves the mailbox. Returns the address.
pub async fn confirm_address(pool: &PgPool, token: &str) -> AppResult<String> {
    let mut tx = pool.begin().await?;
    let (project_id, _, email) = alert_recipients::confirm(&mut tx, token)
        .await?
        .ok_or_else(unknown_link)?;
    audit::record(
        &mut *tx,
        &system_access(ProjectId::new(project_id), &email),
        "alerts.address_confirmed",
        &email,
        serde_json::json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(email)
}
