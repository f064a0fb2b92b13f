//! Alert settings: the project's threshold for `endpoint.failing` (like choosing the
//! operations endpoint, a project setting), and each member's own e-mail opt-in.

use sqlx::PgPool;

use crate::{
    auth::Access,
    core::permissions::Action,
    db::{audit, notices},
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

/// A member's own choice; support staff, who are not members, have no such choice.
pub async fn set_email_alerts(pool: &PgPool, access: &Access, on: bool) -> AppResult<()> {
    access.require(Action::ReadEndpoints)?;
    if !notices::set_email_alerts(pool, access.project_id, access.user_id, on).await? {
        return Err(AppError::Invalid(
            "Only the project's members can get its alerts by e-mail.".into(),
        ));
    }
    Ok(())
}
