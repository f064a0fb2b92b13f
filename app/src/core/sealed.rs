//! Secret material at rest: endpoint secrets, custom header values and client keys are
//! sealed with `POSTHORN_ENCRYPTION_KEY` (ChaCha20-Poly1305, a random nonce per value)
//! before they reach the database, and opened where they are used.
//!
//! A sealed value reads `ph1:<key id>:<base64 of nonce and ciphertext>`; the key id (the
//! first 4 bytes of the key's SHA-256, in hex) names the key that sealed it, so a process
//! given the wrong key says which one it lacks instead of sending garbage. The value's
//! purpose ("endpoint-secret", …) is bound as associated data: a sealed header value
//! copied into a secret column does not open. The variable may list several keys,
//! comma-separated: the first seals, all of them open, which is how a key is rotated
//! while every process keeps working (see `posthorn rotate-encryption-key`).
//!
//! Without a key, values are stored as they are (local use) and the server says so.

use std::sync::OnceLock;

use base64::{engine::general_purpose::STANDARD, Engine};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use sha2::{Digest, Sha256};

const PREFIX: &str = "ph1:";

/// What a sealed value is for: part of its associated data.
pub const ENDPOINT_SECRET: &str = "endpoint-secret";
pub const HEADER_VALUE: &str = "header-value";
pub const CLIENT_KEY: &str = "client-key";
pub const SIGNING_KEY: &str = "signing-key";

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SealError {
    #[error(
        "a value is sealed with encryption key {0}, which POSTHORN_ENCRYPTION_KEY does not hold"
    )]
    UnknownKey(String),
    #[error("a sealed value does not open: it is damaged or was sealed for another use")]
    Damaged,
}

/// A value that does not open is the store's fault, not the caller's: a 500, logged.
impl From<SealError> for crate::error::AppError {
    fn from(e: SealError) -> Self {
        crate::error::AppError::Db(sqlx::Error::Decode(Box::new(e)))
    }
}

/// The keys of `POSTHORN_ENCRYPTION_KEY`: the first seals, every one opens.
pub struct Keyring {
    keys: Vec<(String, LessSafeKey)>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|(id, _)| id))
            .finish()
    }
}

impl Keyring {
    /// Parses the variable's value: base64 keys of 32 bytes, comma-separated.
    pub fn parse(text: &str) -> Result<Keyring, String> {
        let mut keys = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bytes = STANDARD.decode(part).map_err(|_| {
                "POSTHORN_ENCRYPTION_KEY: a key is not base64 (make one with `openssl rand -base64 32`)"
                    .to_string()
            })?;
            if bytes.len() != 32 {
                return Err(format!(
                    "POSTHORN_ENCRYPTION_KEY: a key is {} bytes, not 32 (make one with `openssl rand -base64 32`)",
                    bytes.len()
                ));
            }
            let id = hex::encode(&Sha256::digest(&bytes)[..4]);
            let key = LessSafeKey::new(
                UnboundKey::new(&CHACHA20_POLY1305, &bytes).map_err(|_| "bad key".to_string())?,
            );
            keys.push((id, key));
        }
        if keys.is_empty() {
            return Err("POSTHORN_ENCRYPTION_KEY: no key given".into());
        }
        Ok(Keyring { keys })
    }

    /// The id of the key that seals.
    pub fn current_id(&self) -> &str {
        &self.keys[0].0
    }

    pub fn holds(&self, id: &str) -> bool {
        self.keys.iter().any(|(k, _)| k == id)
    }

    pub fn seal(&self, purpose: &str, plain: &str) -> String {
        let (id, key) = &self.keys[0];
        let mut nonce = [0u8; NONCE_LEN];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut nonce);
        let mut data = plain.as_bytes().to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(purpose.as_bytes()),
            &mut data,
        )
        .expect("a value far below the cipher's limit");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        format!("{PREFIX}{id}:{}", STANDARD.encode(out))
    }

    pub fn open(&self, purpose: &str, stored: &str) -> Result<String, SealError> {
        let Some((id, body)) = split(stored) else {
            return Ok(stored.to_string());
        };
        let (_, key) = self
            .keys
            .iter()
            .find(|(k, _)| k == id)
            .ok_or_else(|| SealError::UnknownKey(id.to_string()))?;
        let raw = STANDARD.decode(body).map_err(|_| SealError::Damaged)?;
        if raw.len() < NONCE_LEN {
            return Err(SealError::Damaged);
        }
        let (nonce, rest) = raw.split_at(NONCE_LEN);
        let mut data = rest.to_vec();
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Damaged)?;
        let plain = key
            .open_in_place(nonce, Aad::from(purpose.as_bytes()), &mut data)
            .map_err(|_| SealError::Damaged)?;
        String::from_utf8(plain.to_vec()).map_err(|_| SealError::Damaged)
    }
}

/// The key id and body of a sealed value; None for a plain one.
fn split(stored: &str) -> Option<(&str, &str)> {
    stored.strip_prefix(PREFIX)?.split_once(':')
}

/// The id of the key a stored value is sealed with; None when it is plain.
pub fn key_id(stored: &str) -> Option<&str> {
    split(stored).map(|(id, _)| id)
}

/// A custom header's value as stored: plain text (no key, or stored before one was set)
/// or sealed. The two have different JSON types, so a header whose value merely looks
/// sealed is never taken for one.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum StoredValue {
    Plain(String),
    Sealed { sealed: String },
}

/// Custom headers as stored: names in the clear (they are listed), values sealed.
pub fn seal_headers(headers: &[(String, String)]) -> Vec<(String, StoredValue)> {
    headers
        .iter()
        .map(|(name, value)| (name.clone(), seal_value(value)))
        .collect()
}

pub fn seal_value(value: &str) -> StoredValue {
    match keyring() {
        Some(k) => StoredValue::Sealed {
            sealed: k.seal(HEADER_VALUE, value),
        },
        None => StoredValue::Plain(value.to_string()),
    }
}

pub fn open_headers(stored: &[(String, StoredValue)]) -> Result<Vec<(String, String)>, SealError> {
    stored
        .iter()
        .map(|(name, value)| {
            Ok((
                name.clone(),
                match value {
                    StoredValue::Plain(v) => v.clone(),
                    StoredValue::Sealed { sealed } => open(HEADER_VALUE, sealed)?,
                },
            ))
        })
        .collect()
}

static KEYRING: OnceLock<Option<Keyring>> = OnceLock::new();

/// Sets the process's keys, once, at start (a second call keeps the first).
pub fn install(keyring: Option<Keyring>) {
    let _ = KEYRING.set(keyring);
}

/// The process's keys, if it was given any.
pub fn keyring() -> Option<&'static Keyring> {
    KEYRING.get().and_then(Option::as_ref)
}

/// Seals with the process's key, or stores as is without one.
pub fn seal(purpose: &str, plain: &str) -> String {
    match keyring() {
        Some(k) => k.seal(purpose, plain),
        None => plain.to_string(),
    }
}

/// Opens a stored value with the process's keys (a plain one is returned as is).
pub fn open(purpose: &str, stored: &str) -> Result<String, SealError> {
    match (keyring(), key_id(stored)) {
        (Some(k), _) => k.open(purpose, stored),
        (None, Some(id)) => Err(SealError::UnknownKey(id.to_string())),
        (None, None) => Ok(stored.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    const B: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";

    #[test]
    fn a_value_opens_for_its_purpose_only() {
        let k = Keyring::parse(A).unwrap();
        let sealed = k.seal(ENDPOINT_SECRET, "whsec_abc");
        assert!(sealed.starts_with(&format!("ph1:{}:", k.current_id())));
        assert!(!sealed.contains("whsec_abc"));
        assert_eq!(k.open(ENDPOINT_SECRET, &sealed).unwrap(), "whsec_abc");
        assert_eq!(k.open(HEADER_VALUE, &sealed), Err(SealError::Damaged));
        // Two seals of one value differ (a fresh nonce each).
        assert_ne!(sealed, k.seal(ENDPOINT_SECRET, "whsec_abc"));
        // Plain values (stored before a key was set) read as they are.
        assert_eq!(
            k.open(ENDPOINT_SECRET, "whsec_plain").unwrap(),
            "whsec_plain"
        );
    }

    #[test]
    fn the_first_key_seals_and_every_listed_key_opens() {
        let old = Keyring::parse(A).unwrap();
        let sealed_old = old.seal(CLIENT_KEY, "pem");
        let both = Keyring::parse(&format!("{B}, {A}")).unwrap();
        assert_eq!(both.open(CLIENT_KEY, &sealed_old).unwrap(), "pem");
        assert_ne!(both.current_id(), old.current_id());
        let sealed_new = both.seal(CLIENT_KEY, "pem");
        assert_eq!(
            old.open(CLIENT_KEY, &sealed_new),
            Err(SealError::UnknownKey(both.current_id().to_string()))
        );
    }

    #[test]
    fn tampering_and_bad_keys_are_refused() {
        let k = Keyring::parse(A).unwrap();
        let sealed = k.seal(ENDPOINT_SECRET, "whsec_abc");
        // One character of the ciphertext changed: still base64, no longer authentic.
        let at = sealed.len() - 12;
        let flip = if &sealed[at..=at] == "A" { "B" } else { "A" };
        let tampered = format!("{}{flip}{}", &sealed[..at], &sealed[at + 1..]);
        assert_eq!(k.open(ENDPOINT_SECRET, &tampered), Err(SealError::Damaged));
        assert!(Keyring::parse("not base64!").is_err());
        assert!(Keyring::parse("c2hvcnQ=").unwrap_err().contains("not 32"));
        assert!(Keyring::parse(" , ").is_err());
    }
}
