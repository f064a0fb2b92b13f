//! How an endpoint signs: switching between HMAC-SHA256 and ed25519 (see
//! [`crate::core::ed25519`]). The key pair is made the first time an endpoint needs one,
//! its private half sealed; after a switch both schemes sign for 24 hours.

use crate::core::EndpointId;
use crate::{
    core::permissions::Access,
    core::{
        ed25519::{self, ED25519, HMAC_SHA256},
        ids::new_endpoint_secret,
        sealed,
    },
    error::{AppError, AppResult},
};

/// Sets the endpoint's scheme. `fresh`: it was made just now, so there is nothing to
/// move over from and no window. Returns the new secret when it switched to HMAC (shown
/// once, like a created endpoint's); None when nothing changed or it switched to ed25519.
pub async fn set(
    tx: &mut sqlx::PgConnection,
    access: &Access,
    id: i64,
    scheme: &str,
    fresh: bool,
) -> AppResult<Option<String>> {
    let row = sqlx::query!(
        r#"SELECT signature_scheme, signing_key IS NOT NULL AS "has_key!" FROM endpoints
          WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL FOR UPDATE"#,
        id,
        access.project_id.get(),
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(AppError::NotFound)?;
    let (current, has_key) = (row.signature_scheme, row.has_key);
    if current == scheme {
        return Ok(None);
    }
    let switched_at = (!fresh).then(chrono::Utc::now);
    if scheme == ED25519 {
        // A key pair made once is kept: switching back and forth keeps one public key.
        let (private, public) = if has_key {
            (None, None)
        } else {
            let (private, public) = ed25519::generate();
            (
                Some(sealed::seal(
                    sealed::SIGNING_KEY.of(access.project_id, EndpointId::new(id)),
                    &private,
                )),
                Some(public),
            )
        };
        sqlx::query!(
            "UPDATE endpoints SET signature_scheme = $2, scheme_switched_at = $3,
                    signing_key = coalesce($4, signing_key), public_key = coalesce($5, public_key),
                    updated_at = now()
              WHERE id = $1",
            id,
            ED25519,
            switched_at as _,
            private,
            public,
        )
        .execute(&mut *tx)
        .await?;
        return Ok(None);
    }
    // To HMAC: a new secret (an ed25519 endpoint's was never shown to anyone).
    let secret = new_endpoint_secret();
    sqlx::query!(
        "UPDATE endpoints SET signature_scheme = $2, scheme_switched_at = $3, secret = $4,
                previous_secret = NULL, previous_secret_expires_at = NULL, updated_at = now()
          WHERE id = $1",
        id,
        HMAC_SHA256,
        switched_at as _,
        sealed::seal(
            sealed::ENDPOINT_SECRET.of(access.project_id, EndpointId::new(id)),
            &secret
        ),
    )
    .execute(&mut *tx)
    .await?;
    Ok(Some(secret))
}

/// The endpoint's scheme and public key (None for HMAC-only endpoints never switched).
pub async fn of(
    db: impl sqlx::PgExecutor<'_>,
    access: &Access,
    id: i64,
) -> AppResult<(String, Option<String>)> {
    sqlx::query!(
        "SELECT signature_scheme, public_key FROM endpoints
          WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL",
        id,
        access.project_id.get(),
    )
    .fetch_optional(db)
    .await?
    .map(|r| (r.signature_scheme, r.public_key))
    .ok_or(AppError::NotFound)
}
