//! Idempotency keys as stored: HMAC-SHA256 under the installation's `idempotency`
//! server key over the project id and the client's key, in hex. Clients often choose
//! user or order ids as keys; stored this way the events table holds none of them (an
//! erasure has nothing to clear), a repeat still finds its first event, and one key used
//! by two projects stores two unrelated values. The migration that converted the keys
//! stored before computes the same in SQL (`20261206001100_idempotency_keys_hashed.sql`).

use crate::core::ProjectId;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The stored form of `client_key` for `project_id`.
pub fn stored_key(server_key: &[u8], project_id: ProjectId, client_key: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(server_key).expect("hmac takes any key length");
    mac.update(&project_id.get().to_be_bytes());
    mac.update(client_key.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::stored_key;
    use crate::core::ProjectId;

    #[test]
    fn a_key_is_stored_per_project_and_never_as_given() {
        let server = [7u8; 32];
        let a = stored_key(&server, ProjectId::new(1), "user-42");
        assert_eq!(a, stored_key(&server, ProjectId::new(1), "user-42"));
        assert_eq!(a.len(), 64);
        assert!(!a.contains("user-42"));
        assert_ne!(a, stored_key(&server, ProjectId::new(2), "user-42"));
        assert_ne!(a, stored_key(&[8u8; 32], ProjectId::new(1), "user-42"));
        // The project id is fixed-width: (1, "2x") and (12, "x") cannot meet.
        assert_ne!(
            stored_key(&server, ProjectId::new(1), "2x"),
            stored_key(&server, ProjectId::new(12), "x")
        );
    }
}
