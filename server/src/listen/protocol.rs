//! What `posthorn listen` and the server say to each other over the WebSocket: JSON text
//! messages, one per frame. The server sends each attempt as the request a real endpoint
//! would get; the CLI answers with what the local receiver said, and that answer is
//! judged by the same rules as an HTTP delivery's.

use app::core::classify::TransportError;
use app::core::{EndpointId, EventId};

use crate::dispatcher::sender::Answer;
use serde::{Deserialize, Serialize};

/// The largest message the server takes from a CLI: an answer's body is cut to 64 KiB by
/// the CLI, and its headers to 16 KiB; escaping in JSON may double them.
pub const MAX_FROM_CLI: usize = 192 * 1024;
/// The largest message the CLI takes from a server: an event's body (at most 256 KiB of
/// data) with its headers, escaped.
pub const MAX_TO_CLI: usize = 1024 * 1024;
/// Attempts a session has out at the CLI at once: a slow laptop holds no more.
pub const WINDOW: usize = 8;

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToCli {
    /// The session is attached; deliveries follow.
    Ready { endpoint_id: EndpointId },
    /// One attempt: POST `body` with `headers` to the local URL.
    Delivery {
        /// The attempt's request id, echoed in the answer.
        id: String,
        event_id: EventId,
        event_type: String,
        attempt: i32,
        headers: Vec<(String, String)>,
        body: String,
    },
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromCli {
    /// What the local receiver answered, or why it could not be reached.
    Answer {
        id: String,
        /// The local receiver's status (absent when it could not be reached).
        #[serde(default)]
        status: Option<u16>,
        #[serde(default)]
        headers: Vec<(String, String)>,
        #[serde(default)]
        body: String,
        /// `connect`, `timeout` or `other` when there is no status.
        #[serde(default)]
        error_kind: Option<String>,
        #[serde(default)]
        error: Option<String>,
        duration_ms: u32,
    },
    /// The CLI is exiting: an unnamed session ends now.
    Bye,
}

/// Response headers kept from an answer, and their total size (as an HTTP delivery's).
const MAX_HEADERS: usize = 100;
const MAX_HEADER_BYTES: usize = 16 * 1024;
const MAX_ERROR: usize = 1024;

/// An answer as the sender's judge takes it, bounded whatever the CLI sent: the status,
/// at most 100 headers in 16 KiB, a body of at most `max_body` bytes; or the failure,
/// its words cut to 1 KiB.
pub fn answer_of(
    status: Option<u16>,
    headers: Vec<(String, String)>,
    mut body: String,
    error_kind: Option<&str>,
    error: Option<String>,
    max_body: usize,
) -> Answer {
    match status.filter(|s| (100..=599).contains(s)) {
        Some(status) => {
            truncate(&mut body, max_body);
            Ok((status, bound_headers(headers), body))
        }
        None => {
            let kind = match error_kind {
                Some("connect") => TransportError::Connect,
                Some("timeout") => TransportError::Timeout,
                _ => TransportError::Other,
            };
            let mut words = error.unwrap_or_else(|| "no answer from the local receiver".into());
            truncate(&mut words, MAX_ERROR);
            Err((kind, format!("posthorn listen: {words}")))
        }
    }
}

/// At most 100 headers in 16 KiB, as an HTTP delivery keeps them.
pub fn bound_headers(headers: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut bytes = 0;
    headers
        .into_iter()
        .take(MAX_HEADERS)
        .take_while(|(k, v)| {
            bytes += k.len() + v.len();
            bytes <= MAX_HEADER_BYTES
        })
        .collect()
}

/// A message as the CLI sends it, within [`MAX_FROM_CLI`] whatever the local receiver
/// answered: JSON writes a control byte as six, so a 64 KiB body can take 384 KiB, and a
/// message over the bound would close the connection and have the same attempt sent
/// again and again. The body is halved until it fits (then the headers go).
pub fn encode(mut msg: FromCli) -> String {
    loop {
        let text = serde_json::to_string(&msg).unwrap_or_default();
        if text.len() <= MAX_FROM_CLI {
            return text;
        }
        match &mut msg {
            FromCli::Answer {
                body,
                headers,
                error,
                ..
            } => {
                if !body.is_empty() {
                    let half = body.len() / 2;
                    truncate(body, half);
                } else if !headers.is_empty() {
                    headers.clear();
                } else {
                    // The rest is an id and words: bounded here, whatever they were.
                    if let Some(e) = error {
                        truncate(e, MAX_ERROR);
                    }
                    return serde_json::to_string(&msg).unwrap_or_default();
                }
            }
            FromCli::Bye => return text,
        }
    }
}

/// Cuts `text` to at most `max` bytes, on a character boundary.
pub fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_as_the_other_side_writes_them() {
        let answer: FromCli = serde_json::from_str(
            r#"{"type":"answer","id":"req_1","status":500,"headers":[["a","b"]],"body":"x","duration_ms":3}"#,
        )
        .unwrap();
        assert!(matches!(
            answer,
            FromCli::Answer {
                status: Some(500),
                ..
            }
        ));
        let bye: FromCli = serde_json::from_str(r#"{"type":"bye"}"#).unwrap();
        assert_eq!(bye, FromCli::Bye);
        let ready = serde_json::to_string(&ToCli::Ready {
            endpoint_id: EndpointId::new(7),
        })
        .unwrap();
        assert_eq!(ready, r#"{"type":"ready","endpoint_id":7}"#);
    }

    #[test]
    fn an_answer_is_bounded_whatever_the_cli_sent() {
        let headers = (0..500)
            .map(|i| (format!("h{i}"), "v".repeat(100)))
            .collect();
        let (status, headers, body) =
            answer_of(Some(200), headers, "é".repeat(100), None, None, 11).unwrap();
        assert_eq!(status, 200);
        assert!(headers.len() < 160, "{}", headers.len());
        assert_eq!(body, "é".repeat(5), "cut on a character boundary");
    }

    #[test]
    fn an_answer_of_control_bytes_still_fits_in_one_message() {
        let answer = FromCli::Answer {
            id: "req_1".into(),
            status: Some(200),
            headers: vec![("x".into(), "\u{1}".repeat(10_000))],
            body: "\u{1}".repeat(64 * 1024),
            error_kind: None,
            error: None,
            duration_ms: 1,
        };
        let text = encode(answer);
        assert!(text.len() <= MAX_FROM_CLI, "{}", text.len());
        let back: FromCli = serde_json::from_str(&text).unwrap();
        assert!(
            matches!(back, FromCli::Answer { status: Some(200), body, .. } if !body.is_empty())
        );
    }

    #[test]
    fn no_status_is_a_transport_failure_in_words() {
        let failed = answer_of(None, vec![], String::new(), Some("connect"), None, 10);
        let (kind, words) = failed.unwrap_err();
        assert_eq!(kind, TransportError::Connect);
        assert!(words.contains("local receiver"), "{words}");
        // A status no HTTP server sends is no status.
        let odd = answer_of(
            Some(42),
            vec![],
            String::new(),
            Some("bogus"),
            Some("x".repeat(5000)),
            10,
        );
        let (kind, words) = odd.unwrap_err();
        assert_eq!(kind, TransportError::Other);
        assert!(words.len() < 1100);
    }
}
