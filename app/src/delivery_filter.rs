//! The delivery list's filters, as they appear in the page's query string: shared by the
//! page, its server functions and the queries in `db/`.

use crate::core::{EndpointId, ProjectId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::core::status::{DeliveryStatus, ErrorKind};

/// The list's filters, as they appear in the page's query string.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryFilter {
    /// The project to show (support staff and members of several projects); the
    /// session's current project when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectId>,
    pub status: Option<DeliveryStatus>,
    pub event_type: Option<String>,
    pub endpoint: Option<EndpointId>,
    pub code: Option<String>,
    pub error_kind: Option<ErrorKind>,
    /// Attempts of events with this ordering key.
    pub ordering_key: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub q: Option<String>,
    pub cursor: Option<String>,
    /// Only attempts of (event, endpoint) pairs still failing: failed or dead-lettered,
    /// with no success and nothing waiting for the pair. Recovery uses it; the page's
    /// query string has no such field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unresolved: bool,
}

impl DeliveryFilter {
    /// Reads the filter from query pairs; unknown or empty values are ignored.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut f = DeliveryFilter::default();
        let text = |v: &str| Some(v.trim().to_string()).filter(|s| !s.is_empty());
        // The form the dashboard writes (UTC), read without chrono's general parser.
        let time = |v: &str| crate::core::wire::parse_utc(v.trim());
        for (k, v) in pairs {
            match k {
                "project" => f.project = v.trim().parse().ok(),
                "status" => f.status = DeliveryStatus::parse(v.trim()),
                "event_type" => f.event_type = text(v),
                "endpoint" => f.endpoint = v.trim().parse().ok(),
                "code" => f.code = text(v),
                "error_kind" => f.error_kind = ErrorKind::parse(v.trim()),
                "ordering_key" => f.ordering_key = text(v),
                "since" => f.since = time(v),
                "until" => f.until = time(v),
                "q" => f.q = text(v),
                "cursor" => f.cursor = text(v),
                _ => {}
            }
        }
        f
    }

    /// The query string that reproduces this view (without the cursor unless asked).
    pub fn to_query(&self, with_cursor: bool) -> String {
        let mut parts: Vec<(&str, String)> = Vec::new();
        if let Some(v) = self.project {
            parts.push(("project", v.to_string()));
        }
        if let Some(v) = self.status {
            parts.push(("status", v.as_str().to_string()));
        }
        if let Some(v) = &self.event_type {
            parts.push(("event_type", v.clone()));
        }
        if let Some(v) = self.endpoint {
            parts.push(("endpoint", v.to_string()));
        }
        if let Some(v) = &self.code {
            parts.push(("code", v.clone()));
        }
        if let Some(v) = self.error_kind {
            parts.push(("error_kind", v.as_str().to_string()));
        }
        if let Some(v) = &self.ordering_key {
            parts.push(("ordering_key", v.clone()));
        }
        if let Some(v) = self.since {
            parts.push((
                "since",
                v.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ));
        }
        if let Some(v) = self.until {
            parts.push((
                "until",
                v.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ));
        }
        if let Some(v) = &self.q {
            parts.push(("q", v.clone()));
        }
        if with_cursor {
            if let Some(v) = &self.cursor {
                parts.push(("cursor", v.clone()));
            }
        }
        parts
            .into_iter()
            .map(|(k, v)| format!("{k}={}", encode_component(&v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

pub fn encode_component(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_round_trip_through_the_query_string() {
        let f = DeliveryFilter::from_pairs([
            ("status", "dead_letter"),
            ("code", "5xx"),
            ("q", "evt_1"),
            ("endpoint", "7"),
            ("ordering_key", "order 7/a"),
        ]);
        assert_eq!(f.status, Some(DeliveryStatus::DeadLetter));
        assert_eq!(f.endpoint, Some(EndpointId::new(7)));
        assert_eq!(
            f.to_query(false),
            "status=dead_letter&endpoint=7&code=5xx&ordering_key=order%207%2Fa&q=evt_1"
        );
    }

    #[test]
    fn unknown_statuses_are_ignored() {
        assert_eq!(
            DeliveryFilter::from_pairs([("status", "bogus")]).status,
            None
        );
    }
}
