//! Users and password hashes (argon2).

use crate::core::UserId;
use argon2::{
    password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Argon2,
};
use sqlx::PgPool;

use crate::error::{AppError, AppResult};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct User {
    pub id: UserId,
    pub email: String,
    pub password_hash: String,
    pub role: String,
    /// Bumped by a password change; sessions of an older epoch are void.
    pub session_epoch: i32,
}

impl User {
    pub fn is_support(&self) -> bool {
        self.role == "support"
    }
}

pub fn hash_password(password: &str) -> AppResult<String> {
    if password.chars().count() < 8 {
        return Err(AppError::Invalid(
            "password must be at least 8 characters".into(),
        ));
    }
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| AppError::Invalid(format!("cannot hash password: {e}")))
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}

/// Password hashing is deliberately slow (tens of milliseconds of CPU): it runs on the
/// blocking pool, at most this many at once, so a flood of sign-ins queues here instead
/// of stalling the async runtime that also serves pages and runs the dispatcher.
static HASHING_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// How long a sign-in waits for a hashing slot before it is told to come back.
const HASHING_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> AppResult<T> {
    let _slot = tokio::time::timeout(HASHING_WAIT, HASHING_SLOTS.acquire())
        .await
        .map_err(|_| AppError::TooMany("The server is busy signing people in; try again.".into()))?
        .map_err(|_| AppError::TooMany("shutting down".into()))?;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| AppError::Invalid("password check failed".into()))
}

/// [`verify_password`] on the blocking pool, behind the hashing slots.
pub async fn check_password(password: &str, hash: &str) -> AppResult<bool> {
    let (password, hash) = (password.to_owned(), hash.to_owned());
    off_runtime(move || verify_password(&password, &hash)).await
}

/// [`hash_password`] on the blocking pool, behind the hashing slots.
pub async fn make_hash(password: &str) -> AppResult<String> {
    let password = password.to_owned();
    off_runtime(move || hash_password(&password)).await?
}

/// A hash to verify against when the email is unknown, so both paths cost the same.
pub fn dummy_hash() -> &'static str {
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$9ZbHkJ8hxV9GEXkQq9cJ+6c0bCHx1LJ9n2D3Zp1rxXw"
}

/// Makes a new account with an already hashed password, and never touches an existing
/// one: None when the address is taken (even by an account made a moment ago by
/// someone else), so nobody is handed a row whose password they did not give.
pub async fn create(
    db: impl sqlx::PgExecutor<'_>,
    email: &str,
    password_hash: &str,
    role: &str,
) -> AppResult<Option<User>> {
    let email = email.trim();
    if !email.contains('@') {
        return Err(AppError::Invalid("email must contain @".into()));
    }
    Ok(sqlx::query_as!(
        User,
        "INSERT INTO users (email, password_hash, role) VALUES ($1, $2, $3)
         ON CONFLICT (lower(email)) DO NOTHING
         RETURNING id, email, password_hash, role, session_epoch",
        email,
        password_hash,
        role,
    )
    .fetch_optional(db)
    .await?)
}

/// Creates the user, or resets the password and role of an existing one: for the command
/// line and idempotent seeding only, where the operator names the password.
pub async fn upsert(pool: &PgPool, email: &str, password: &str, role: &str) -> AppResult<User> {
    let hash = make_hash(password).await?;
    Ok(sqlx::query_as!(
        User,
        "INSERT INTO users (email, password_hash, role) VALUES ($1, $2, $3)
         ON CONFLICT (lower(email)) DO UPDATE SET password_hash = EXCLUDED.password_hash, role = EXCLUDED.role
         RETURNING id, email, password_hash, role, session_epoch",
        email.trim(),
        &hash,
        role,
    )
    .fetch_one(pool)
    .await?)
}

pub async fn find_by_email(pool: &PgPool, email: &str) -> AppResult<Option<User>> {
    Ok(sqlx::query_as!(
        User,
        "SELECT id, email, password_hash, role, session_epoch FROM users WHERE lower(email) = lower($1)",
        email.trim(),
    )
    .fetch_optional(pool)
    .await?)
}

pub async fn get(pool: &PgPool, id: UserId) -> AppResult<Option<User>> {
    Ok(sqlx::query_as!(
        User,
        "SELECT id, email, password_hash, role, session_epoch FROM users WHERE id = $1",
        id.get(),
    )
    .fetch_optional(pool)
    .await?)
}

/// Sets a new password and ends every session of the user; returns the new epoch, which
/// the session that made the change carries on with.
pub async fn set_password(pool: &PgPool, id: UserId, password: &str) -> AppResult<i32> {
    let hash = make_hash(password).await?;
    Ok(sqlx::query_scalar!(
        "UPDATE users SET password_hash = $2, session_epoch = session_epoch + 1 WHERE id = $1
         RETURNING session_epoch",
        id.get(),
        hash,
    )
    .fetch_one(pool)
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_verifies_against_its_hash_only() {
        let h = hash_password("correct horse").unwrap();
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse", &h));
        assert!(!verify_password("x", "not a hash"));
    }

    #[test]
    fn short_passwords_are_refused() {
        assert!(hash_password("short").is_err());
    }
}
