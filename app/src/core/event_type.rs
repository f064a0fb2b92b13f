//! Event type names: `word.word` (lower-case words, at least two), or `*` in subscriptions.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EventType(String);

impl EventType {
    pub fn parse(s: &str) -> Result<Self, String> {
        let valid = s.len() <= 128
            && s.split('.').count() >= 2
            && s.split('.').all(|word| {
                let mut chars = word.chars();
                matches!(chars.next(), Some('a'..='z'))
                    && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            });
        if valid {
            Ok(EventType(s.to_owned()))
        } else {
            Err(format!(
                "event type `{}` must look like `payment.succeeded` (lower-case words joined by dots)",
                s.chars().take(64).collect::<String>()
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EventType {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        EventType::parse(&s)
    }
}

impl From<EventType> for String {
    fn from(t: EventType) -> String {
        t.0
    }
}

/// A subscription filter entry: a concrete type or `*`.
pub fn parse_subscription(entries: &[String]) -> Result<Vec<String>, String> {
    if entries.is_empty() {
        return Err("events must list at least one event type, or \"*\"".into());
    }
    entries
        .iter()
        .map(|e| {
            if e == "*" {
                Ok(e.clone())
            } else {
                EventType::parse(e).map(String::from)
            }
        })
        .collect()
}

pub fn subscribed(filter: &[String], event_type: &str) -> bool {
    filter.iter().any(|f| f == "*" || f == event_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dotted_lowercase_words() {
        for ok in ["payment.succeeded", "a.b.c", "chat_v2.opened", "x1.y"] {
            assert!(EventType::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_everything_else() {
        for bad in [
            "payment",
            "Payment.succeeded",
            "payment.",
            ".x",
            "1a.b",
            "a..b",
            "a.b-c",
            "",
        ] {
            assert!(EventType::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn star_subscribes_to_everything() {
        assert!(subscribed(&["*".into()], "a.b"));
        assert!(subscribed(&["a.b".into()], "a.b"));
        assert!(!subscribed(&["a.c".into()], "a.b"));
    }
}
