//! Asymmetric signatures (Standard Webhooks `v1a`): an endpoint with the `ed25519`
//! scheme has a key pair; its deliveries are signed with the private half, which never
//! leaves the server (sealed at rest like the secrets), and receivers verify with the
//! public half, `whpk_<base64>`, which cannot forge a delivery.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use ring::{
    rand::SystemRandom,
    signature::{Ed25519KeyPair, KeyPair},
};

/// The schemes an endpoint signs with.
pub const HMAC_SHA256: &str = "hmac-sha256";
pub const ED25519: &str = "ed25519";

/// What an ed25519 endpoint answers when asked for its secret.
pub const NO_SECRET: &str =
    "this endpoint signs with ed25519: it has no secret; receivers verify with its public key";

/// After a switch of schemes, the one before keeps signing this long beside the new one.
pub const SWITCH_WINDOW: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// Which signatures a delivery carries.
#[derive(Debug, PartialEq)]
pub struct Active {
    pub hmac: bool,
    pub ed25519: bool,
}

/// An endpoint signs with its scheme, and with the other one too within
/// [`SWITCH_WINDOW`] of a switch (HMAC only back to one that had a key).
pub fn active(
    scheme: &str,
    switched_at: Option<chrono::DateTime<chrono::Utc>>,
    has_key: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Active {
    let window = switched_at.is_some_and(|at| now - at < SWITCH_WINDOW);
    if scheme == ED25519 {
        Active {
            hmac: window,
            ed25519: true,
        }
    } else {
        Active {
            hmac: true,
            ed25519: window && has_key,
        }
    }
}

/// The scheme named in a request, or why it is refused.
pub fn parse_scheme(text: &str) -> Result<&'static str, String> {
    match text {
        HMAC_SHA256 => Ok(HMAC_SHA256),
        ED25519 => Ok(ED25519),
        other => Err(format!(
            "signature_scheme: `{other}` is not one of `hmac-sha256`, `ed25519`"
        )),
    }
}

/// A new key pair: (the private key as base64 PKCS#8, to be sealed; the public key as
/// `whpk_…`).
pub fn generate() -> (String, String) {
    let pkcs8 =
        Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("the system's random source");
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("a key pair just made");
    (
        STANDARD.encode(pkcs8.as_ref()),
        public_key_text(pair.public_key().as_ref()),
    )
}

/// `whpk_<base64 of the 32-byte key>`.
pub fn public_key_text(raw: &[u8]) -> String {
    format!("whpk_{}", STANDARD.encode(raw))
}

/// `v1a,<base64 of the 64-byte signature>` over `{msg_id}.{timestamp}.{body}`.
pub fn sign(pkcs8_b64: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> Result<String, String> {
    let pkcs8 = STANDARD
        .decode(pkcs8_b64)
        .map_err(|_| "signing key: not base64".to_string())?;
    let pair = Ed25519KeyPair::from_pkcs8(&pkcs8)
        .map_err(|_| "signing key: not ed25519 PKCS#8".to_string())?;
    let mut content = Vec::with_capacity(msg_id.len() + body.len() + 24);
    content.extend_from_slice(msg_id.as_bytes());
    content.push(b'.');
    content.extend_from_slice(timestamp.to_string().as_bytes());
    content.push(b'.');
    content.extend_from_slice(body);
    Ok(format!(
        "v1a,{}",
        STANDARD.encode(pair.sign(&content).as_ref())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ED25519 as RING_ED25519};

    #[test]
    fn a_signature_verifies_with_the_public_key_over_the_standard_content() {
        let (private, public) = generate();
        let raw = STANDARD
            .decode(public.strip_prefix("whpk_").unwrap())
            .unwrap();
        assert_eq!(raw.len(), 32);
        let sig = sign(&private, "evt_1", 1_700_000_000, b"{\"a\":1}").unwrap();
        let bytes = STANDARD.decode(sig.strip_prefix("v1a,").unwrap()).unwrap();
        assert_eq!(bytes.len(), 64);
        let key = UnparsedPublicKey::new(&RING_ED25519, &raw);
        assert!(key.verify(b"evt_1.1700000000.{\"a\":1}", &bytes).is_ok());
        assert!(key.verify(b"evt_1.1700000000.{\"a\":2}", &bytes).is_err());
        assert!(sign("bm90IGEga2V5", "e", 1, b"").is_err());
    }

    #[test]
    fn both_schemes_sign_for_a_day_after_a_switch() {
        let now = chrono::Utc::now();
        let hour_ago = Some(now - chrono::TimeDelta::hours(1));
        let two_days_ago = Some(now - chrono::TimeDelta::hours(48));
        let both = Active {
            hmac: true,
            ed25519: true,
        };
        assert_eq!(
            active(ED25519, None, true, now),
            Active {
                hmac: false,
                ed25519: true
            }
        );
        assert_eq!(active(ED25519, hour_ago, true, now), both);
        assert_eq!(
            active(ED25519, two_days_ago, true, now),
            Active {
                hmac: false,
                ed25519: true
            }
        );
        assert_eq!(active(HMAC_SHA256, hour_ago, true, now), both);
        assert_eq!(
            active(HMAC_SHA256, two_days_ago, true, now),
            Active {
                hmac: true,
                ed25519: false
            }
        );
        assert_eq!(
            active(HMAC_SHA256, None, false, now),
            Active {
                hmac: true,
                ed25519: false
            }
        );
    }

    #[test]
    fn only_the_two_schemes_are_accepted() {
        assert_eq!(parse_scheme("ed25519"), Ok(ED25519));
        assert_eq!(parse_scheme("hmac-sha256"), Ok(HMAC_SHA256));
        assert!(parse_scheme("ED25519").unwrap_err().contains("not one of"));
    }
}
