//! The body a receiver gets. Built from the stored event on every attempt, so it is the
//! same bytes each time and needs no copy per attempt.

use crate::core::EventId;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::value::RawValue;

/// Bodies above this carry `"data": null, "truncated": true` instead of the data.
pub const MAX_BODY: usize = 64 * 1024;

#[derive(Serialize)]
struct Body<'a> {
    event_id: &'a str,
    event: &'a str,
    created_at: String,
    data: &'a RawValue,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

/// `data_json` is the event's data as stored (valid JSON text).
pub fn build_body(
    event_id: &EventId,
    event_type: &str,
    created_at: DateTime<Utc>,
    data_json: &str,
) -> Vec<u8> {
    let null: &RawValue = serde_json::from_str("null").expect("null is JSON");
    let data: &RawValue = serde_json::from_str(data_json).unwrap_or(null);
    let created_at = created_at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let full = serde_json::to_vec(&Body {
        event_id,
        event: event_type,
        created_at: created_at.clone(),
        data,
        truncated: false,
    })
    .expect("serializing a body cannot fail");
    if full.len() <= MAX_BODY {
        return full;
    }
    serde_json::to_vec(&Body {
        event_id,
        event: event_type,
        created_at,
        data: null,
        truncated: true,
    })
    .expect("serializing a body cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
    }

    #[test]
    fn the_body_has_the_documented_shape() {
        let body = build_body(
            &EventId::from("evt_1"),
            "payment.succeeded",
            at(),
            r#"{"amount":5}"#,
        );
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"event_id":"evt_1","event":"payment.succeeded","created_at":"2026-11-29T12:00:00Z","data":{"amount":5}}"#
        );
    }

    #[test]
    fn a_body_over_64_kib_drops_its_data() {
        let big = format!(r#"{{"blob":"{}"}}"#, "x".repeat(100 * 1024));
        let body = build_body(&EventId::from("evt_1"), "a.b", at(), &big);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(body.len() < 1024);
        assert_eq!(v["data"], serde_json::Value::Null);
        assert_eq!(v["truncated"], true);
    }

    #[test]
    fn the_same_event_gives_the_same_bytes() {
        let a = build_body(&EventId::from("evt_1"), "a.b", at(), r#"{"k": [1, 2]}"#);
        let b = build_body(&EventId::from("evt_1"), "a.b", at(), r#"{"k": [1, 2]}"#);
        assert_eq!(a, b);
    }
}
