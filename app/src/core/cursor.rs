//! Keyset cursors: a token for the position (created_at, id) in a list, written
//! `{micros}_{id}` so that the API document can state its exact shape: every string of
//! `^[0-9]{1,16}_[0-9]{1,18}$` decodes (16 digits of microseconds reach the year 2286,
//! 18 of id stay inside `i64`), so a client checked against the document is never refused.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use chrono::{DateTime, Utc};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub created_at: DateTime<Utc>,
    pub id: i64,
}

impl Cursor {
    pub fn encode(&self) -> String {
        format!("{}_{}", self.created_at.timestamp_micros().max(0), self.id)
    }

    /// Also reads the base64 form earlier versions issued, so stored cursors keep working.
    pub fn decode(token: &str) -> Result<Cursor, String> {
        let bad = || "cursor is not one this API returned".to_string();
        let raw = match token.split_once('_') {
            Some(_) => token.replacen('_', ":", 1),
            None => {
                let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
                String::from_utf8(raw).map_err(|_| bad())?
            }
        };
        let (micros, id) = raw.split_once(':').ok_or_else(bad)?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(micros) || !digits(id) || micros.len() > 16 || id.len() > 18 {
            return Err(bad());
        }
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
    fn the_earlier_base64_form_still_reads() {
        let old = URL_SAFE_NO_PAD.encode("1764000000123456:42");
        assert_eq!(Cursor::decode(&old).unwrap().id, 42);
    }

    #[test]
    fn every_string_of_the_documented_shape_decodes() {
        for s in ["0_0", "9999999999999999_999999999999999999", "1_2"] {
            assert!(Cursor::decode(s).is_ok(), "{s}");
        }
        for s in [
            "_1",
            "1_",
            "1_-2",
            "-1_2",
            "1_2_3",
            "a_b",
            "",
            "99999999999999999_1",
        ] {
            assert!(Cursor::decode(s).is_err(), "{s}");
        }
    }

    #[test]
    fn garbage_is_refused() {
        assert!(Cursor::decode("!!").is_err());
        assert!(Cursor::decode(&URL_SAFE_NO_PAD.encode("x:y")).is_err());
    }
}
