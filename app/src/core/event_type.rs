//! Event type names: `word.word` (lower-case words, at least two), or `*` in subscriptions.

use serde::{Deserialize, Serialize};

/// The grammar [`EventType::parse`] checks, once, for the patterns built from it.
macro_rules! words {
    () => {
        r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+"
    };
}

/// An event type, as a pattern (the API documents give it to every event-type field).
pub const PATTERN: &str = concat!("^", words!(), "$");
/// A subscription entry: an event type, or `*` for every type.
pub const SUBSCRIPTION_PATTERN: &str = concat!(r"^(\*|", words!(), ")$");
/// The longest event type.
pub const MAX_LEN: usize = 128;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EventType(String);

impl EventType {
    pub fn parse(s: &str) -> Result<Self, String> {
        let valid = s.len() <= MAX_LEN
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

/// Fields and parameters typed `EventType` (or given `value_type = EventType`) are
/// documented with [`PATTERN`], so the documents and the parser share one grammar.
#[cfg(feature = "ssr")]
impl utoipa::PartialSchema for EventType {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some(PATTERN))
            .max_length(Some(MAX_LEN))
            .description(Some(
                "Lower-case words joined by dots, e.g. `payment.succeeded`.",
            ))
            .examples([serde_json::json!("payment.succeeded")])
            .into()
    }
}

#[cfg(feature = "ssr")]
impl utoipa::ToSchema for EventType {}

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

    const GOOD: [&str; 4] = ["payment.succeeded", "a.b.c", "chat_v2.opened", "x1.y"];
    const BAD: [&str; 8] = [
        "payment",
        "Payment.succeeded",
        "payment.",
        ".x",
        "1a.b",
        "a..b",
        "a.b-c",
        "",
    ];

    #[test]
    fn accepts_dotted_lowercase_words() {
        for ok in GOOD {
            assert!(EventType::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_everything_else() {
        for bad in BAD {
            assert!(EventType::parse(bad).is_err(), "{bad}");
        }
    }

    /// The documents' patterns and the parser agree on every name tried.
    #[test]
    fn the_patterns_and_the_parser_agree() {
        let pattern = regex::Regex::new(PATTERN).unwrap();
        let subscription = regex::Regex::new(SUBSCRIPTION_PATTERN).unwrap();
        let long = format!("a.{}", "b".repeat(MAX_LEN - 2));
        let too_long = format!("{long}c");
        let odd = ["*", "a.b\n", "a.b\0", &long, &too_long];
        for s in GOOD.into_iter().chain(BAD).chain(odd) {
            let parsed = EventType::parse(s).is_ok();
            // The length is the schema's `maxLength`, not the pattern's.
            assert_eq!(parsed, pattern.is_match(s) && s.len() <= MAX_LEN, "{s:?}");
            assert_eq!(
                parse_subscription(&[s.to_string()]).is_ok(),
                subscription.is_match(s) && s.len() <= MAX_LEN,
                "{s:?}"
            );
        }
    }

    #[test]
    fn star_subscribes_to_everything() {
        assert!(subscribed(&["*".into()], "a.b"));
        assert!(subscribed(&["a.b".into()], "a.b"));
        assert!(!subscribed(&["a.c".into()], "a.b"));
    }
}
