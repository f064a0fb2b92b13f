//! Failed attempts explained for people: what happened, in words, and what Posthorn does
//! next. The raw client text stays beside it (the dashboard shows it under "details");
//! this is what a support engineer reads first.

use super::status::{DeliveryStatus, ErrorKind};

/// One sentence on what went wrong, one on what happens next; `None` for an attempt
/// without an error.
pub fn explain(
    kind: Option<ErrorKind>,
    raw: Option<&str>,
    code: Option<i16>,
    status: DeliveryStatus,
) -> Option<String> {
    let what = what_happened(kind, raw, code)?;
    let kind = kind?;
    let next = match status {
        // The row is this attempt; the next one is its own row, in the attempts list.
        DeliveryStatus::Failed => RETRIES_ON_SCHEDULE.to_string(),
        DeliveryStatus::DeadLetter if kind == ErrorKind::Erased => {
            "Nothing more will be sent.".to_string()
        }
        DeliveryStatus::DeadLetter => {
            "No more automatic tries: fix the endpoint, then Retry.".to_string()
        }
        _ => String::new(),
    };
    Some(if next.is_empty() {
        what
    } else {
        format!("{what} {next}")
    })
}

/// The first sentence alone: what went wrong (`None` for an attempt without an error).
/// Where what comes next is known otherwise, it takes the second sentence's place.
pub fn what_happened(
    kind: Option<ErrorKind>,
    raw: Option<&str>,
    code: Option<i16>,
) -> Option<String> {
    let kind = kind?;
    let raw = raw.unwrap_or_default();
    Some(match kind {
        ErrorKind::Timeout => "The endpoint did not answer in time.".to_string(),
        ErrorKind::Connect => "Could not connect to the endpoint's server: it refused the \
             connection or could not be reached."
            .to_string(),
        ErrorKind::Dns => "The endpoint's host name could not be found (DNS).".to_string(),
        ErrorKind::Tls => format!("The secure connection failed: {}.", tls_reason(raw)),
        ErrorKind::Io => "The connection broke before a complete answer arrived.".to_string(),
        ErrorKind::HttpStatus => match code {
            Some(c) => format!("The endpoint answered {c} {}.", status_phrase(c)),
            None => "The endpoint answered with an error status.".to_string(),
        },
        ErrorKind::RefusedTarget => "Posthorn did not send it: the endpoint's address is \
             private, loopback or otherwise reserved."
            .to_string(),
        ErrorKind::EndpointDeleted => "The endpoint was deleted before it could be sent.".into(),
        ErrorKind::Internal => "The attempt broke inside Posthorn, not at the endpoint.".into(),
        ErrorKind::Erased => "The event's data was erased, so there was nothing to send.".into(),
        ErrorKind::Refused => {
            format!(
                "The broker refused the message, and will until its settings change: {}",
                raw.trim_end_matches('.')
            ) + "."
        }
    })
}

/// What a failed attempt says comes next, until a later attempt says what did.
pub const RETRIES_ON_SCHEDULE: &str = "Posthorn retries it on its schedule.";

/// What became of a failed attempt, told by the attempt that followed it (its number and
/// status): replaces [`RETRIES_ON_SCHEDULE`] once there is one.
pub fn what_followed(next_attempt: i32, next: DeliveryStatus) -> String {
    match next {
        DeliveryStatus::Succeeded => format!("Attempt {next_attempt} succeeded."),
        DeliveryStatus::Pending => format!("Attempt {next_attempt} is scheduled."),
        DeliveryStatus::InFlight => format!("Attempt {next_attempt} is being sent."),
        DeliveryStatus::Failed => format!("Attempt {next_attempt} failed too."),
        DeliveryStatus::DeadLetter => {
            format!("Attempt {next_attempt} failed too, with no more automatic tries.")
        }
    }
}

/// The certificate problem named in a TLS client's error chain.
pub fn tls_reason(raw: &str) -> &'static str {
    let lower = raw.to_ascii_lowercase();
    let has = |s: &str| lower.contains(s);
    if has("expired") {
        "the receiver's certificate has expired"
    } else if has("notvalidyet") || has("not valid yet") {
        "the receiver's certificate is not valid yet"
    } else if has("unknown issuer") || has("unknownissuer") {
        "the receiver's certificate is signed by an authority Posthorn does not trust"
    } else if has("not valid for name") || has("notvalidforname") {
        "the receiver's certificate is for another host name"
    } else if has("revoked") {
        "the receiver's certificate is revoked"
    } else if has("certificate required") || has("certificaterequired") {
        "the receiver asks for a client certificate"
    } else if has("protocol version") || has("peerincompatible") {
        "the receiver does not speak TLS 1.2 or later"
    } else {
        "the handshake did not complete"
    }
}

fn status_phrase(code: i16) -> &'static str {
    match code {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        c if c < 400 => "(a redirect, which is not followed)",
        c if c < 500 => "(the receiver refused the request)",
        _ => "(the receiver's server failed)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_happened_and_what_comes_next() {
        let t = explain(
            Some(ErrorKind::HttpStatus),
            Some("endpoint answered 503"),
            Some(503),
            DeliveryStatus::Failed,
        )
        .unwrap();
        assert_eq!(
            t,
            "The endpoint answered 503 Service Unavailable. Posthorn retries it on its schedule."
        );
        let t = explain(
            Some(ErrorKind::Dns),
            Some("client error (Connect): dns error: failed to lookup address"),
            None,
            DeliveryStatus::DeadLetter,
        )
        .unwrap();
        assert!(t.starts_with("The endpoint's host name could not be found"));
        assert!(t.ends_with("fix the endpoint, then Retry."));
        assert!(!t.contains("client error"), "{t}");
    }

    #[test]
    fn names_the_certificate_problem() {
        let raw = "error sending request: client error (Connect): invalid peer certificate: \
                   certificate not valid for name \"localhost\"";
        assert_eq!(
            tls_reason(raw),
            "the receiver's certificate is for another host name"
        );
        assert!(tls_reason("invalid peer certificate: Expired").contains("expired"));
        assert!(tls_reason("invalid peer certificate: UnknownIssuer").contains("does not trust"));
        assert_eq!(tls_reason("eof"), "the handshake did not complete");
    }

    #[test]
    fn nothing_for_a_success() {
        assert_eq!(
            explain(None, None, Some(200), DeliveryStatus::Succeeded),
            None
        );
    }
}
