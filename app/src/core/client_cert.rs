//! Client certificates for mutual TLS: an endpoint's certificate (with its chain) and
//! key, as PEM, checked when they are set so that a delivery never finds them unusable.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::Regex;
use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};

/// Each of the two PEM texts at most, in characters (a leaf, a few intermediates, an
/// RSA-4096 key), as the documents' `maxLength` counts them.
pub const MAX_PEM_CHARS: usize = 16 * 1024;
/// Certificates in the chain at most, the endpoint's own first.
pub const MAX_CHAIN: usize = 5;

/// What the certificate text must hold before it is read (the documents give the
/// pattern as is): no NUL, and a `CERTIFICATE` block whose `BEGIN` starts a line.
pub const CERT_PATTERN: &str = r"^([^\x00]*\n)?-----BEGIN CERTIFICATE-----[ \r]*\n[A-Za-z0-9+/=\s]*-----END CERTIFICATE-----[^\x00]*$";
/// The same for the key: a PKCS#8, RSA or EC `PRIVATE KEY` block.
pub const KEY_PATTERN: &str = r"^([^\x00]*\n)?-----BEGIN (RSA |EC )?PRIVATE KEY-----[ \r]*\n[A-Za-z0-9+/=\s]*-----END (RSA |EC )?PRIVATE KEY-----[^\x00]*$";

static CERT_BLOCK: LazyLock<Regex> = LazyLock::new(|| Regex::new(CERT_PATTERN).expect("valid"));
static KEY_BLOCK: LazyLock<Regex> = LazyLock::new(|| Regex::new(KEY_PATTERN).expect("valid"));

/// A checked certificate and key, and what is shown of them.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientCert {
    pub cert_pem: String,
    pub key_pem: String,
    /// The certificate's subject, as `CN=…, O=…`.
    pub subject: String,
    pub not_after: DateTime<Utc>,
}

/// Checks a certificate chain and its key: PEM of bounded size, the first certificate
/// not yet expired, and the key the one its public key belongs to. The error says what
/// is wrong, for a `422`.
pub fn check(cert_pem: &str, key_pem: &str, now: DateTime<Utc>) -> Result<ClientCert, String> {
    if cert_pem.chars().count() > MAX_PEM_CHARS || key_pem.chars().count() > MAX_PEM_CHARS {
        return Err(format!(
            "client_certificate: cert and key are each at most {MAX_PEM_CHARS} characters of PEM"
        ));
    }
    if !CERT_BLOCK.is_match(cert_pem) {
        return Err(
            "client_certificate.cert: no `BEGIN CERTIFICATE` block (PEM text, \
                    without NUL characters)"
                .into(),
        );
    }
    if !KEY_BLOCK.is_match(key_pem) {
        return Err(
            "client_certificate.key: no PEM private key block (PKCS#8, RSA or EC, \
                    without NUL characters)"
                .into(),
        );
    }
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("client_certificate.cert: not PEM certificates ({e})"))?;
    if chain.is_empty() {
        return Err("client_certificate.cert: no `BEGIN CERTIFICATE` block".into());
    }
    if chain.len() > MAX_CHAIN {
        return Err(format!(
            "client_certificate.cert: at most {MAX_CHAIN} certificates (the endpoint's own first, then its chain)"
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|_| {
        "client_certificate.key: no PEM private key (PKCS#8, RSA or EC, unencrypted)".to_string()
    })?;
    let (subject, not_after) = {
        let (_, leaf) = x509_parser::parse_x509_certificate(&chain[0]).map_err(|e| {
            format!("client_certificate.cert: the first certificate does not parse ({e})")
        })?;
        let not_after = DateTime::from_timestamp(leaf.validity().not_after.timestamp(), 0)
            .ok_or("client_certificate.cert: its expiry is out of range")?;
        (leaf.subject().to_string(), not_after)
    };
    if not_after <= now {
        return Err(format!(
            "client_certificate.cert: expired on {}",
            not_after.format("%Y-%m-%d %H:%M UTC")
        ));
    }
    let signing = rustls::crypto::ring::sign::any_supported_type(&key).map_err(|_| {
        "client_certificate.key: an unsupported key (RSA, ECDSA P-256/P-384 or Ed25519)".to_string()
    })?;
    rustls::sign::CertifiedKey::new(chain, signing)
        .keys_match()
        .map_err(|_| {
            "client_certificate: the key does not belong to the first certificate".to_string()
        })?;
    // From its block on: text before it is the tenant's to choose, and without an
    // encryption key it would be stored as given, reading as a value sealed with a key
    // no process holds (which stops every process at its start check).
    let key_pem = key_pem
        .find("-----BEGIN")
        .map_or(key_pem, |at| &key_pem[at..]);
    Ok(ClientCert {
        cert_pem: cert_pem.to_string(),
        key_pem: key_pem.to_string(),
        subject,
        not_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str, not_after: (i32, u8, u8)) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_matching_pair_is_shown_by_subject_and_expiry() {
        let (cert, key) = pair("shop.example", (2040, 1, 2));
        let c = check(&cert, &key, Utc::now()).unwrap();
        assert_eq!(c.subject, "CN=shop.example");
        assert_eq!(c.not_after.format("%Y-%m-%d").to_string(), "2040-01-02");
    }

    #[test]
    fn a_foreign_key_an_expired_certificate_and_garbage_are_refused() {
        let (cert, _) = pair("a.example", (2040, 1, 1));
        let (_, other_key) = pair("b.example", (2040, 1, 1));
        let e = check(&cert, &other_key, Utc::now()).unwrap_err();
        assert!(e.contains("does not belong"), "{e}");
        let (old, old_key) = pair("c.example", (2021, 1, 1));
        assert!(check(&old, &old_key, Utc::now())
            .unwrap_err()
            .contains("expired on 2021-01-01"));
        assert!(check("hello", &other_key, Utc::now())
            .unwrap_err()
            .contains("no `BEGIN"));
        assert!(check(&cert, "hello", Utc::now())
            .unwrap_err()
            .contains("no PEM private key"));
        let nul = format!("{cert}\0");
        assert!(check(&nul, &other_key, Utc::now())
            .unwrap_err()
            .contains("NUL"));
        let huge = "x".repeat(MAX_PEM_CHARS + 1);
        assert!(check(&huge, &other_key, Utc::now())
            .unwrap_err()
            .contains("at most 16384 characters"));
        let six = cert.repeat(6);
        assert!(check(&six, &other_key, Utc::now())
            .unwrap_err()
            .contains("at most 5"));
    }

    #[test]
    fn the_key_is_kept_from_its_pem_block_never_from_text_before_it() {
        // Text before the block would be stored as given without an encryption key, and
        // this text reads as a value sealed with a key no process holds.
        let (cert, key) = pair("d.example", (2040, 1, 1));
        let posing = format!("ph2:0badc0de:AAAA\n{key}");
        let kept = check(&cert, &posing, Utc::now()).map(|c| c.key_pem);
        assert_eq!(kept, Ok(key));
    }

    /// Whatever the checks accept matches the documents' patterns, and a text that misses
    /// them is refused by the pattern's own message.
    #[test]
    fn what_is_accepted_matches_the_documents_patterns() {
        let (cert, key) = pair("e.example", (2040, 1, 1));
        let (crlf, crlf_key) = (cert.replace('\n', "\r\n"), key.replace('\n', "\r\n"));
        let (bagged, bagged_key) = (format!("subject=CN = e\n{cert}\n"), format!("Bag\n{key}"));
        for (c, k) in [(&cert, &key), (&crlf, &crlf_key), (&bagged, &bagged_key)] {
            assert!(check(c, k, Utc::now()).is_ok());
            assert!(CERT_BLOCK.is_match(c) && KEY_BLOCK.is_match(k));
        }
        let inline = format!("text {cert}");
        let e = check(&inline, &key, Utc::now()).unwrap_err();
        assert!(e.contains("no `BEGIN CERTIFICATE` block"), "{e}");
        assert!(!KEY_BLOCK.is_match(&cert) && !CERT_BLOCK.is_match(&key));
    }
}
