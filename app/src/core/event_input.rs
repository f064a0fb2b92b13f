//! What every event, alone or in a batch, must be before anything is stored: a known
//! shape of type, an object as `data` nested no deeper than the project's `data_depth`,
//! keys and subjects of bounded length without NUL. The API, the dashboard and the CLI
//! send events through [`crate::use_cases::ingest`], which asks this module first.

use std::borrow::Cow;

use crate::{
    core::{
        event_type::EventType,
        limits::{json_depth, reached, Limit},
        text::{no_nul, replace_nul_escapes},
    },
    error::AppError,
};

/// Events in one batch at most.
pub const MAX_BATCH: usize = 100;
/// The longest idempotency key, in the body's `id` or the header.
pub const MAX_KEY: usize = 255;
/// The longest ordering key.
pub const MAX_ORDERING_KEY: usize = 255;
/// At most this many subjects per event, each at most [`MAX_SUBJECT`] characters.
pub const MAX_SUBJECTS: usize = 10;
pub const MAX_SUBJECT: usize = 255;

/// An event as a request carries it, before any check.
#[derive(Clone, Copy, Debug)]
pub struct EventInput<'a> {
    pub event: &'a str,
    /// The `data` member as JSON text (any JSON; only an object is accepted).
    pub data: &'a str,
    /// The client's idempotency key from the body.
    pub id: Option<&'a str>,
    pub ordering_key: Option<&'a str>,
    pub subjects: Option<&'a [String]>,
}

/// One event, checked and ready to store (`data` is copied only if it had to change).
#[derive(Debug)]
pub struct Checked<'a> {
    pub event_type: EventType,
    pub key: Option<String>,
    pub data: Cow<'a, str>,
    pub ordering_key: Option<&'a str>,
    pub subjects: Option<&'a [String]>,
}

fn invalid(message: String) -> AppError {
    AppError::Invalid(message)
}

/// Checks one event; `at` prefixes the field names in errors (`events[3].`).
pub fn check<'a>(e: EventInput<'a>, at: &str, max_depth: u32) -> Result<Checked<'a>, AppError> {
    let event_type = EventType::parse(e.event).map_err(|m| invalid(format!("{at}event: {m}")))?;
    if !e.data.trim_start().starts_with('{') {
        return Err(invalid(format!("{at}data: must be a JSON object")));
    }
    // The body's parser skips `data` without a depth limit; PostgreSQL's does not, and
    // a failed insert would take a whole group of other requests' events with it.
    if json_depth(e.data, max_depth) > max_depth {
        return Err(AppError::LimitReached(format!(
            "{at}data: {}",
            reached(Limit::DataDepth, max_depth as u64)
        )));
    }
    let key = e.id.filter(|k| !k.is_empty()).map(str::to_string);
    if let Some(k) = &key {
        if k.len() > MAX_KEY {
            return Err(invalid(format!(
                "{at}id (idempotency key) must be at most {MAX_KEY} characters"
            )));
        }
        no_nul(&format!("{at}id"), k).map_err(invalid)?;
    }
    if let Some(k) = e.ordering_key {
        let n = k.chars().count();
        if n == 0 || n > MAX_ORDERING_KEY {
            return Err(invalid(format!(
                "{at}ordering_key: between 1 and {MAX_ORDERING_KEY} characters, not {n}"
            )));
        }
        no_nul(&format!("{at}ordering_key"), k).map_err(invalid)?;
    }
    if let Some(subjects) = e.subjects {
        check_subjects(subjects).map_err(|m| invalid(format!("{at}subjects{m}")))?;
    }
    Ok(Checked {
        event_type,
        key,
        // The one character PostgreSQL cannot keep in a payload becomes U+FFFD (README).
        data: replace_nul_escapes(e.data),
        ordering_key: e.ordering_key,
        subjects: e.subjects.filter(|s| !s.is_empty()),
    })
}

/// Checks a batch's size and then every item, before any is stored: a batch is refused
/// whole or taken whole.
pub fn check_batch<'a>(
    events: &[EventInput<'a>],
    max_depth: u32,
) -> Result<Vec<Checked<'a>>, AppError> {
    let n = events.len();
    if n == 0 || n > MAX_BATCH {
        return Err(invalid(format!(
            "events: between 1 and {MAX_BATCH} items, not {n}"
        )));
    }
    (events.iter().enumerate())
        .map(|(i, e)| check(*e, &format!("events[{i}]."), max_depth))
        .collect()
}

/// The `Idempotency-Key` header, when the body carries no `id`: `None` when absent;
/// `Err(())` stands for a value that is not visible ASCII.
pub fn header_key(value: Option<Result<&str, ()>>) -> Result<Option<String>, AppError> {
    match value {
        None => Ok(None),
        Some(Err(())) => Err(invalid(
            "Idempotency-Key: only visible ASCII characters".into(),
        )),
        Some(Ok(k)) if k.len() > MAX_KEY => Err(invalid(format!(
            "Idempotency-Key: at most {MAX_KEY} characters"
        ))),
        Some(Ok(k)) => Ok(Some(k.to_string())),
    }
}

/// The message's tail after the field name when the subjects are not acceptable.
fn check_subjects(subjects: &[String]) -> Result<(), String> {
    if subjects.len() > MAX_SUBJECTS {
        return Err(format!(
            ": at most {MAX_SUBJECTS} items, not {}",
            subjects.len()
        ));
    }
    for (i, s) in subjects.iter().enumerate() {
        let n = s.chars().count();
        if n == 0 || n > MAX_SUBJECT {
            return Err(format!(
                "[{i}]: between 1 and {MAX_SUBJECT} characters, not {n}"
            ));
        }
        no_nul("", s).map_err(|_| format!("[{i}]: must not contain NUL"))?;
    }
    Ok(())
}

/// One data subject, as an erasure by subject names it.
pub fn check_subject(subject: &str) -> Result<(), AppError> {
    let n = subject.chars().count();
    if n == 0 || n > MAX_SUBJECT {
        return Err(invalid(format!(
            "subject: between 1 and {MAX_SUBJECT} characters, not {n}"
        )));
    }
    no_nul("subject", subject).map_err(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(event: &'a str, data: &'a str) -> EventInput<'a> {
        EventInput {
            event,
            data,
            id: None,
            ordering_key: None,
            subjects: None,
        }
    }

    #[test]
    fn an_event_is_checked_field_by_field_with_its_place_in_the_batch() {
        let ok = check(input("order.paid", r#"{"a":1}"#), "", 8).unwrap();
        assert_eq!(ok.event_type.as_str(), "order.paid");
        let e = check(input("Order", "{}"), "events[2].", 8).unwrap_err();
        assert!(e.to_string().starts_with("events[2].event: "), "{e}");
        let e = check(input("order.paid", "[1]"), "", 8).unwrap_err();
        assert_eq!(e.to_string(), "data: must be a JSON object");
        let e = check(input("order.paid", r#"{"a":{"b":{"c":1}}}"#), "", 2).unwrap_err();
        assert!(matches!(e, AppError::LimitReached(_)), "{e}");
    }

    #[test]
    fn keys_and_subjects_are_bounded_and_free_of_nul() {
        let long = "k".repeat(MAX_KEY + 1);
        let e = check(
            EventInput {
                id: Some(&long),
                ..input("a.b", "{}")
            },
            "",
            8,
        )
        .unwrap_err();
        assert!(e.to_string().contains("at most 255"), "{e}");
        let e = check(
            EventInput {
                ordering_key: Some(""),
                ..input("a.b", "{}")
            },
            "",
            8,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ordering_key: between 1 and 255 characters, not 0"
        );
        let subjects = vec!["user:1".to_string(), "a\0b".to_string()];
        let e = check(
            EventInput {
                subjects: Some(&subjects),
                ..input("a.b", "{}")
            },
            "",
            8,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "subjects[1]: must not contain NUL");
        assert!(check_subject("").is_err() && check_subject("user:42").is_ok());
        assert!(header_key(Some(Err(()))).is_err());
        assert_eq!(header_key(Some(Ok("k1"))).unwrap().as_deref(), Some("k1"));
    }

    #[test]
    fn a_batch_is_refused_whole_by_its_first_bad_item_or_its_size() {
        let items = [input("a.b", "{}"), input("a.b", "1")];
        let e = check_batch(&items, 8).unwrap_err();
        assert_eq!(e.to_string(), "events[1].data: must be a JSON object");
        let e = check_batch(&[], 8).unwrap_err();
        assert_eq!(e.to_string(), "events: between 1 and 100 items, not 0");
    }
}
