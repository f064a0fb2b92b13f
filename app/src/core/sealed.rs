//! Secret material at rest: endpoint secrets, custom header values and client keys are
//! sealed with `POSTHORN_ENCRYPTION_KEY` (ChaCha20-Poly1305, a random nonce per value)
//! before they reach the database, and opened where they are used.
//!
//! A sealed value reads `ph2:<key id>:<base64 of nonce and ciphertext>`; the key id (the
//! first 4 bytes of the key's SHA-256, in hex) names the key that sealed it, so a process
//! given the wrong key says which one it lacks instead of sending garbage. Its [`Slot`]
//! (purpose, project and endpoint) is bound as associated data: a value copied by SQL into
//! another column, another endpoint or another project's row does not open there.
//! The variable may list several keys, comma-separated: the first seals, all of them
//! open, which is how a key is rotated while every process keeps working (see
//! `posthorn rotate-encryption-key`).
//!
//! A keyed process opens nothing else: a plain value, or one of the earlier `ph1:` format
//! (bound to its purpose only), is refused, since anyone who can write a row could have
//! put it there. Only re-sealing takes those in ([`Keyring::open_accepting`]), while the
//! database says they may still be genuine (see `db::sealing`).
//!
//! Without a key, values are stored as they are (local use) and the server says so.

use crate::core::{EndpointId, ProjectId};
use std::sync::OnceLock;

use base64::{engine::general_purpose::STANDARD, Engine};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use sha2::{Digest, Sha256};

/// Values sealed bound to their slot.
const BOUND: &str = "ph2:";
/// Values sealed by earlier versions, bound to their purpose only.
const UNBOUND: &str = "ph1:";

/// What a sealed value is for: part of its associated data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Purpose(&'static str);

pub const ENDPOINT_SECRET: Purpose = Purpose("endpoint-secret");
pub const HEADER_VALUE: Purpose = Purpose("header-value");
pub const CLIENT_KEY: Purpose = Purpose("client-key");
pub const SIGNING_KEY: Purpose = Purpose("signing-key");
/// A broker destination's credentials (JSON of [`crate::core::destination::Credentials`]).
pub const DESTINATION_CREDENTIALS: Purpose = Purpose("destination-credentials");

impl Purpose {
    /// This purpose in one endpoint of one project.
    pub const fn of(self, project_id: ProjectId, endpoint_id: EndpointId) -> Slot {
        Slot {
            purpose: self,
            project_id,
            endpoint_id,
        }
    }
}

/// Where a sealed value belongs: it opens there and nowhere else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub purpose: Purpose,
    pub project_id: ProjectId,
    pub endpoint_id: EndpointId,
}

impl Slot {
    fn associated_data(&self) -> String {
        format!(
            "{}:{}:{}",
            self.purpose.0, self.project_id, self.endpoint_id
        )
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SealError {
    #[error(
        "a value is sealed with encryption key {0}, which POSTHORN_ENCRYPTION_KEY does not hold"
    )]
    UnknownKey(String),
    #[error("a sealed value does not open: it is damaged or was sealed for another endpoint, project or use")]
    Damaged,
    #[error("a secret is stored in plain text beside sealed ones: refused (set it again)")]
    Plain,
    #[error("a secret is sealed in the earlier format (ph1:), bound to no endpoint: refused (set it again)")]
    Unbound,
}

/// A value that does not open is the store's fault, not the caller's: a 500, logged.
impl From<SealError> for crate::error::AppError {
    fn from(e: SealError) -> Self {
        crate::error::AppError::Db(sqlx::Error::Decode(Box::new(e)))
    }
}

/// What re-sealing may still take in besides values bound to their slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Accept {
    /// Plain values (written before any key was set).
    pub plain: bool,
    /// `ph1:` values (sealed before values were bound to their slot).
    pub unbound: bool,
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

    pub fn seal(&self, slot: Slot, plain: &str) -> String {
        let (id, key) = &self.keys[0];
        let mut nonce = [0u8; NONCE_LEN];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut nonce);
        let mut data = plain.as_bytes().to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(slot.associated_data().as_bytes()),
            &mut data,
        )
        .expect("a value far below the cipher's limit");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        format!("{BOUND}{id}:{}", STANDARD.encode(out))
    }

    /// Opens a value sealed for `slot`; anything else is refused.
    pub fn open(&self, slot: Slot, stored: &str) -> Result<String, SealError> {
        self.open_accepting(slot, stored, Accept::default())
    }

    /// [`Keyring::open`], also taking in what `accept` allows (for re-sealing only).
    pub fn open_accepting(
        &self,
        slot: Slot,
        stored: &str,
        accept: Accept,
    ) -> Result<String, SealError> {
        let (aad, id, body) = match parse(stored) {
            Stored::Plain if accept.plain => return Ok(stored.to_string()),
            Stored::Plain => return Err(SealError::Plain),
            Stored::Unbound { .. } if !accept.unbound => return Err(SealError::Unbound),
            Stored::Unbound { id, body } => (slot.purpose.0.to_string(), id, body),
            Stored::Bound { id, body } => (slot.associated_data(), id, body),
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
            .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut data)
            .map_err(|_| SealError::Damaged)?;
        String::from_utf8(plain.to_vec()).map_err(|_| SealError::Damaged)
    }
}

/// A stored value, by its prefix.
enum Stored<'a> {
    Plain,
    Unbound { id: &'a str, body: &'a str },
    Bound { id: &'a str, body: &'a str },
}

fn parse(stored: &str) -> Stored<'_> {
    let split = |rest: &'static str| stored.strip_prefix(rest)?.split_once(':');
    if let Some((id, body)) = split(BOUND) {
        Stored::Bound { id, body }
    } else if let Some((id, body)) = split(UNBOUND) {
        Stored::Unbound { id, body }
    } else {
        Stored::Plain
    }
}

/// The id of the key a stored value is sealed with; None when it is plain.
pub fn key_id(stored: &str) -> Option<&str> {
    match parse(stored) {
        Stored::Plain => None,
        Stored::Unbound { id, .. } | Stored::Bound { id, .. } => Some(id),
    }
}

/// Whether the value is sealed bound to its slot with the key `id`.
pub fn is_bound_with(stored: &str, id: &str) -> bool {
    matches!(parse(stored), Stored::Bound { id: k, .. } if k == id)
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

/// Custom headers as stored for the endpoint `slot` names: names in the clear (they are
/// listed), values sealed.
pub fn seal_headers(slot: Slot, headers: &[(String, String)]) -> Vec<(String, StoredValue)> {
    headers
        .iter()
        .map(|(name, value)| (name.clone(), seal_value(slot, value)))
        .collect()
}

pub fn seal_value(slot: Slot, value: &str) -> StoredValue {
    match keyring() {
        Some(k) => StoredValue::Sealed {
            sealed: k.seal(slot, value),
        },
        None => StoredValue::Plain(value.to_string()),
    }
}

pub fn open_headers(
    slot: Slot,
    stored: &[(String, StoredValue)],
) -> Result<Vec<(String, String)>, SealError> {
    stored
        .iter()
        .map(|(name, value)| {
            let value = match value {
                StoredValue::Plain(_) if keyring().is_some() => return Err(SealError::Plain),
                StoredValue::Plain(v) => v.clone(),
                StoredValue::Sealed { sealed } => open(slot, sealed)?,
            };
            Ok((name.clone(), value))
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
pub fn seal(slot: Slot, plain: &str) -> String {
    match keyring() {
        Some(k) => k.seal(slot, plain),
        None => plain.to_string(),
    }
}

/// Opens a stored value with the process's keys; without keys, a plain value is
/// returned as is.
pub fn open(slot: Slot, stored: &str) -> Result<String, SealError> {
    match (keyring(), key_id(stored)) {
        (Some(k), _) => k.open(slot, stored),
        (None, Some(id)) => Err(SealError::UnknownKey(id.to_string())),
        (None, None) => Ok(stored.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    const B: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";
    const HERE: Slot = ENDPOINT_SECRET.of(ProjectId::new(1), EndpointId::new(10));

    #[test]
    fn a_value_opens_in_its_own_slot_only() {
        let k = Keyring::parse(A).unwrap();
        let sealed = k.seal(HERE, "whsec_abc");
        assert!(sealed.starts_with(&format!("ph2:{}:", k.current_id())));
        assert!(!sealed.contains("whsec_abc"));
        assert_eq!(k.open(HERE, &sealed).unwrap(), "whsec_abc");
        // Another purpose, another endpoint of the project, another project's endpoint.
        for elsewhere in [
            HEADER_VALUE.of(ProjectId::new(1), EndpointId::new(10)),
            ENDPOINT_SECRET.of(ProjectId::new(1), EndpointId::new(11)),
            ENDPOINT_SECRET.of(ProjectId::new(2), EndpointId::new(10)),
        ] {
            assert_eq!(k.open(elsewhere, &sealed), Err(SealError::Damaged));
        }
        // Two seals of one value differ (a fresh nonce each).
        assert_ne!(sealed, k.seal(HERE, "whsec_abc"));
    }

    /// `whsec_legacy0123456789` sealed with `A` for an endpoint secret by the earlier
    /// format, bound to its purpose only.
    const LEGACY: &str =
        "ph1:3eb1bd43:AAECAwQFBgcICQoLj1cnXQQck87wc5ryBblj9QT7ZEUJHdBLo9mrhsXnfVO54MXe+dA=";

    #[test]
    fn plain_and_earlier_values_open_only_for_resealing_while_allowed() {
        let k = Keyring::parse(A).unwrap();
        assert_eq!(k.open(HERE, "whsec_plain"), Err(SealError::Plain));
        assert_eq!(k.open(HERE, LEGACY), Err(SealError::Unbound));
        let all = Accept {
            plain: true,
            unbound: true,
        };
        assert_eq!(
            k.open_accepting(HERE, "whsec_plain", all).unwrap(),
            "whsec_plain"
        );
        // The earlier format opens in any endpoint (which is why it is refused), for its
        // purpose only.
        assert_eq!(
            k.open_accepting(
                ENDPOINT_SECRET.of(ProjectId::new(7), EndpointId::new(70)),
                LEGACY,
                all
            )
            .unwrap(),
            "whsec_legacy0123456789"
        );
        assert_eq!(
            k.open_accepting(
                HEADER_VALUE.of(ProjectId::new(1), EndpointId::new(10)),
                LEGACY,
                all
            ),
            Err(SealError::Damaged)
        );
        let plain_only = Accept {
            plain: true,
            unbound: false,
        };
        assert_eq!(
            k.open_accepting(HERE, LEGACY, plain_only),
            Err(SealError::Unbound)
        );
        assert_eq!(key_id(LEGACY), Some("3eb1bd43"));
        assert!(!is_bound_with(LEGACY, "3eb1bd43"));
        assert!(is_bound_with(&k.seal(HERE, "x"), k.current_id()));
    }

    #[test]
    fn the_first_key_seals_and_every_listed_key_opens() {
        let old = Keyring::parse(A).unwrap();
        let slot = CLIENT_KEY.of(ProjectId::new(3), EndpointId::new(4));
        let sealed_old = old.seal(slot, "pem");
        let both = Keyring::parse(&format!("{B}, {A}")).unwrap();
        assert_eq!(both.open(slot, &sealed_old).unwrap(), "pem");
        assert_ne!(both.current_id(), old.current_id());
        let sealed_new = both.seal(slot, "pem");
        assert_eq!(
            old.open(slot, &sealed_new),
            Err(SealError::UnknownKey(both.current_id().to_string()))
        );
    }

    #[test]
    fn tampering_and_bad_keys_are_refused() {
        let k = Keyring::parse(A).unwrap();
        let sealed = k.seal(HERE, "whsec_abc");
        // One character of the ciphertext changed: still base64, no longer authentic.
        let at = sealed.len() - 12;
        let flip = if &sealed[at..=at] == "A" { "B" } else { "A" };
        let tampered = format!("{}{flip}{}", &sealed[..at], &sealed[at + 1..]);
        assert_eq!(k.open(HERE, &tampered), Err(SealError::Damaged));
        // A bound value relabelled as the earlier format opens nowhere either.
        let relabelled = sealed.replacen("ph2:", "ph1:", 1);
        let all = Accept {
            plain: true,
            unbound: true,
        };
        assert_eq!(
            k.open_accepting(HERE, &relabelled, all),
            Err(SealError::Damaged)
        );
        assert!(Keyring::parse("not base64!").is_err());
        assert!(Keyring::parse("c2hvcnQ=").unwrap_err().contains("not 32"));
        assert!(Keyring::parse(" , ").is_err());
    }
}
