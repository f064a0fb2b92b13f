//! Users and password hashes (argon2).

use argon2::{
    password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
    Argon2,
};
use sqlx::PgPool;

use crate::error::{AppError, AppResult};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct User {
    pub id: i64,
    pub email: String,
    pub password_hash: String,
    pub role: String,
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

/// A hash to verify against when the email is unknown, so both paths cost the same.
pub fn dummy_hash() -> &'static str {
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$9ZbHkJ8hxV9GEXkQq9cJ+6c0bCHx1LJ9n2D3Zp1rxXw"
}

pub async fn create(pool: &PgPool, email: &str, password: &str, role: &str) -> AppResult<User> {
    let email = email.trim();
    if !email.contains('@') {
        return Err(AppError::Invalid("email must contain @".into()));
    }
    let hash = hash_password(password)?;
    let user = sqlx::query_as::<_, User>(
        "INSERT INTO users (email, password_hash, role) VALUES ($1, $2, $3)
         ON CONFLICT (lower(email)) DO UPDATE SET role = users.role
         RETURNING id, email, password_hash, role",
    )
    .bind(email)
    .bind(&hash)
    .bind(role)
    .fetch_one(pool)
    .await?;
    Ok(user)
}

/// Creates the user, or resets the password and role of an existing one (idempotent seeding).
pub async fn upsert(pool: &PgPool, email: &str, password: &str, role: &str) -> AppResult<User> {
    let hash = hash_password(password)?;
    Ok(sqlx::query_as::<_, User>(
        "INSERT INTO users (email, password_hash, role) VALUES ($1, $2, $3)
         ON CONFLICT (lower(email)) DO UPDATE SET password_hash = EXCLUDED.password_hash, role = EXCLUDED.role
         RETURNING id, email, password_hash, role",
    )
    .bind(email.trim())
    .bind(&hash)
    .bind(role)
    .fetch_one(pool)
    .await?)
}

pub async fn find_by_email(pool: &PgPool, email: &str) -> AppResult<Option<User>> {
    Ok(sqlx::query_as::<_, User>(
        "SELECT id, email, password_hash, role FROM users WHERE lower(email) = lower($1)",
    )
    .bind(email.trim())
    .fetch_optional(pool)
    .await?)
}

pub async fn get(pool: &PgPool, id: i64) -> AppResult<Option<User>> {
    Ok(
        sqlx::query_as::<_, User>("SELECT id, email, password_hash, role FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

pub async fn set_password(pool: &PgPool, id: i64, password: &str) -> AppResult<()> {
    let hash = hash_password(password)?;
    sqlx::query("UPDATE users SET password_hash = $2 WHERE id = $1")
        .bind(id)
        .bind(hash)
        .execute(pool)
        .await?;
    Ok(())
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
