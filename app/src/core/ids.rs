//! Identifiers: time-ordered where the id is seen in lists, 128+ random bits where it
//! must be unguessable.

use base64::{
    engine::general_purpose::STANDARD, engine::general_purpose::URL_SAFE_NO_PAD, Engine as _,
};
use rand::RngCore;

/// `evt_` + 24 characters: the ULID's 10 time characters and 14 of its random ones.
pub fn new_event_id() -> String {
    let ulid = ulid::Ulid::new().to_string();
    format!("evt_{}", &ulid[..24])
}

/// `req_` + 26 characters, new for every attempt.
pub fn new_request_id() -> String {
    format!("req_{}", ulid::Ulid::new())
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::thread_rng().fill_bytes(&mut bytes);
    bytes
}

/// Inspector bin ids: 128 random bits, hex.
pub fn new_bin_id() -> String {
    hex::encode(random_bytes::<16>())
}

/// Endpoint secrets: `whsec_` + base64 of 32 random bytes.
pub fn new_endpoint_secret() -> String {
    format!("whsec_{}", STANDARD.encode(random_bytes::<32>()))
}

/// API keys: 256 random bits. Returns (the key shown once, its display prefix).
pub fn new_api_key() -> (String, String) {
    let key = format!("phk_{}", URL_SAFE_NO_PAD.encode(random_bytes::<32>()));
    let prefix = key[..12].to_string();
    (key, prefix)
}

/// One-time tokens (invitations).
pub fn new_token() -> String {
    URL_SAFE_NO_PAD.encode(random_bytes::<32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_their_documented_shapes() {
        assert_eq!(new_event_id().len(), 4 + 24);
        assert!(new_event_id().starts_with("evt_"));
        assert_eq!(new_request_id().len(), 4 + 26);
        assert_eq!(new_bin_id().len(), 32);
        let secret = new_endpoint_secret();
        assert_eq!(STANDARD.decode(&secret[6..]).unwrap().len(), 32);
        assert_ne!(new_api_key().0, new_api_key().0);
    }

    #[test]
    fn event_ids_sort_by_time() {
        let a = new_event_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(new_event_id() > a);
    }
}
