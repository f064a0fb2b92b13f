//! Keyset cursors: an opaque token for the position (created_at, id) in a list.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use chrono::{DateTime, Utc};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub created_at: DateTime<Utc>,
    pub id: i64,
}

impl Cursor {
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!(
            "{}:{}",
            self.created_at.timestamp_micros(),
            self.id
        ))
    }

    pub fn decode(token: &str) -> Result<Cursor, String> {
        let bad = || "cursor is not one this API returned".to_string();
        let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
        let raw = String::from_utf8(raw).map_err(|_| bad())?;
        let (micros, id) = raw.split_once(':').ok_or_else(bad)?;
        let micros: i64 = micros.parse().map_err(|_| bad())?;
        let id: i64 = id.parse().map_err(|_| bad())?;
        let created_at = DateTime::from_timestamp_micros(micros).ok_or_else(bad)?;
        Ok(Cursor { created_at, id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips() {
        let c = Cursor {
            created_at: DateTime::from_timestamp_micros(1_764_000_000_123_456).unwrap(),
            id: 42,
        };
        assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
    }

    #[test]
    fn garbage_is_refused() {
        assert!(Cursor::decode("!!").is_err());
        assert!(Cursor::decode(&URL_SAFE_NO_PAD.encode("x:y")).is_err());
    }
}
