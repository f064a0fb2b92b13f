//! Request signing: Posthorn's own `X-Botix-Signature` and the Standard Webhooks
//! `webhook-signature`. Pure functions, shared with the browser so the inspector can
//! verify a captured request without sending the secret anywhere.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = HmacSha256::new_from_slice(key).expect("hmac takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// `sha256=<hex>` over `"{timestamp}.{body}"`, keyed by the secret's UTF-8 bytes.
pub fn botix_signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    let mac = hmac(secret.as_bytes(), &[ts.as_bytes(), b".", body]);
    format!("sha256={}", hex::encode(mac))
}

/// The key bytes of a `whsec_…` secret: the base64 part decoded. A secret that is not
/// valid base64 falls back to its raw bytes so a hand-made secret still signs.
pub fn standard_key(secret: &str) -> Vec<u8> {
    let b64 = secret.strip_prefix("whsec_").unwrap_or(secret);
    STANDARD
        .decode(b64)
        .unwrap_or_else(|_| b64.as_bytes().to_vec())
}

/// `v1,<base64>` over `"{msg_id}.{timestamp}.{body}"` (Standard Webhooks).
pub fn standard_signature(secret: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    let key = standard_key(secret);
    let mac = hmac(&key, &[msg_id.as_bytes(), b".", ts.as_bytes(), b".", body]);
    format!("v1,{}", STANDARD.encode(mac))
}

/// The signature headers for one attempt. `secrets` is newest first; a rotated-out
/// secret that is still valid signs alongside the new one.
pub struct Signatures {
    pub botix: String,
    pub standard: String,
}

pub fn sign_all(secrets: &[&str], msg_id: &str, timestamp: i64, body: &[u8]) -> Signatures {
    let botix = secrets
        .iter()
        .map(|s| botix_signature(s, timestamp, body))
        .collect::<Vec<_>>()
        .join(", ");
    let standard = secrets
        .iter()
        .map(|s| standard_signature(s, msg_id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ");
    Signatures { botix, standard }
}

/// Constant-time check of one signature header (either scheme, any listed value).
pub fn verify(
    secret: &str,
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
    botix_header: Option<&str>,
    standard_header: Option<&str>,
) -> SignatureCheck {
    let want_botix = botix_signature(secret, timestamp, body);
    let want_std = standard_signature(secret, msg_id, timestamp, body);
    let botix = botix_header.map(|h| {
        h.split(',')
            .map(str::trim)
            .any(|v| constant_eq(v.as_bytes(), want_botix.as_bytes()))
    });
    let standard = standard_header.map(|h| {
        h.split(' ')
            .map(str::trim)
            .any(|v| constant_eq(v.as_bytes(), want_std.as_bytes()))
    });
    SignatureCheck { botix, standard }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignatureCheck {
    /// `None` when the request carried no such header.
    pub botix: Option<bool>,
    pub standard: Option<bool>,
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Receivers accept timestamps within ±5 minutes.
pub fn timestamp_is_fresh(timestamp: i64, now: i64) -> bool {
    (now - timestamp).abs() <= 300
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    const ID: &str = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk";
    const TS: i64 = 1649367553;
    const BODY: &[u8] = br#"{"email":"test@example.com","username":"test_user"}"#;

    #[test]
    fn standard_webhooks_test_vector() {
        assert_eq!(
            standard_signature(SECRET, ID, TS, BODY),
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="
        );
    }

    #[test]
    fn botix_test_vector() {
        assert_eq!(
            botix_signature(SECRET, TS, BODY),
            "sha256=996637d7f89ef8f7b59f7faaf5341457472e823d8ca666d16b7bbd1dc831721d"
        );
    }

    #[test]
    fn a_rotated_secret_signs_twice_and_both_verify() {
        let old = "whsec_b2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xkb2s=";
        let sigs = sign_all(&[SECRET, old], ID, TS, BODY);
        assert_eq!(sigs.botix.matches("sha256=").count(), 2);
        assert_eq!(sigs.standard.matches("v1,").count(), 2);
        for s in [SECRET, old] {
            let check = verify(s, ID, TS, BODY, Some(&sigs.botix), Some(&sigs.standard));
            assert_eq!(
                check,
                SignatureCheck {
                    botix: Some(true),
                    standard: Some(true)
                }
            );
        }
        let wrong = verify("whsec_AAAA", ID, TS, BODY, Some(&sigs.botix), None);
        assert_eq!(
            wrong,
            SignatureCheck {
                botix: Some(false),
                standard: None
            }
        );
    }

    #[test]
    fn a_tampered_body_fails() {
        let sig = botix_signature(SECRET, TS, BODY);
        let check = verify(SECRET, ID, TS, b"{}", Some(&sig), None);
        assert_eq!(check.botix, Some(false));
    }

    #[test]
    fn freshness_window_is_five_minutes_each_way() {
        assert!(timestamp_is_fresh(1000, 1300));
        assert!(timestamp_is_fresh(1300, 1000));
        assert!(!timestamp_is_fresh(1000, 1301));
    }
}
