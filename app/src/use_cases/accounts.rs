//! Accounts the command line makes for whoever runs the server: users (staff and
//! owners) and the operator keys a platform's backend speaks with.

use sqlx::PgPool;

use crate::{
    db::{audit, operator_keys, users, users::User},
    error::{AppError, AppResult},
};

/// Makes a user, or resets an existing one's password and role (`user` or `support`).
pub async fn create_user(
    pool: &PgPool,
    email: &str,
    password: &str,
    role: &str,
) -> AppResult<User> {
    if !matches!(role, "user" | "support") {
        return Err(AppError::Invalid("role: user or support".into()));
    }
    users::upsert(pool, email, password, role).await
}

/// A new operator key, shown this once (stored hashed).
pub async fn create_operator_key(pool: &PgPool, name: &str) -> AppResult<String> {
    operator_keys::create(pool, name).await
}

/// Revokes the live operator key of that name; not found when there is none.
pub async fn revoke_operator_key(pool: &PgPool, name: &str) -> AppResult<()> {
    if operator_keys::revoke(pool, name).await? {
        Ok(())
    } else {
        Err(AppError::NotFound)
    }
}

/// The audit entry of one operator API call (`operator.<method>` on its path, with the
/// status it got), written after the call whatever its outcome.
pub async fn audit_operator_call(
    pool: &PgPool,
    operator: &str,
    method: &str,
    path: &str,
    status: u16,
) -> AppResult<()> {
    let action = format!("operator.{}", method.to_ascii_lowercase());
    let detail = serde_json::json!({ "status": status });
    audit::record_operator(pool, operator, &action, path, detail).await
}
