//! What an attempt's result means for the event: done, try again, or give up.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::core::status::ErrorKind;

/// The verdict on one attempt, before the retry schedule is consulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Succeeded,
    /// Worth another attempt; `retry_after` overrides the schedule's delay (429 only).
    Retryable {
        retry_after: Option<Duration>,
    },
    /// No automatic attempt follows (3xx, 4xx other than 429, refused target).
    Fatal,
}

/// Network-level failures, recorded as `error_kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportError {
    Timeout,
    Connect,
    Dns,
    Tls,
    RefusedTarget,
    Other,
}

impl TransportError {
    pub fn kind(self) -> ErrorKind {
        match self {
            TransportError::Timeout => ErrorKind::Timeout,
            TransportError::Connect => ErrorKind::Connect,
            TransportError::Dns => ErrorKind::Dns,
            TransportError::Tls => ErrorKind::Tls,
            TransportError::RefusedTarget => ErrorKind::RefusedTarget,
            TransportError::Other => ErrorKind::Io,
        }
    }
}

pub fn classify_status(status: u16, retry_after: Option<&str>, now: DateTime<Utc>) -> Verdict {
    match status {
        200..=299 => Verdict::Succeeded,
        429 => Verdict::Retryable {
            retry_after: retry_after.and_then(|v| parse_retry_after(v, now)),
        },
        500..=599 => Verdict::Retryable { retry_after: None },
        _ => Verdict::Fatal,
    }
}

pub fn classify_error(error: TransportError) -> Verdict {
    match error {
        TransportError::RefusedTarget => Verdict::Fatal,
        _ => Verdict::Retryable { retry_after: None },
    }
}

/// The longest wait a `Retry-After` can ask for. Anything longer is cut to this, which
/// lies past any retry window the schedule allows, so the chain ends as a dead letter.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// `Retry-After` as delay-seconds or an HTTP-date; a date in the past means "now". The
/// value comes from the receiver: it is bounded by [`MAX_RETRY_AFTER`] and never panics.
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if value.len() > 64 {
        return None;
    }
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // All digits but too long for a u64 is still "very long", not garbage.
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
    }
    let at: DateTime<Utc> = httpdate::parse_http_date(value).ok()?.into();
    let wait = at
        .signed_duration_since(now)
        .to_std()
        .unwrap_or(Duration::ZERO);
    Some(wait.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
    }

    #[test]
    fn any_2xx_succeeds() {
        for s in [200, 201, 202, 204, 299] {
            assert_eq!(classify_status(s, None, now()), Verdict::Succeeded);
        }
    }

    #[test]
    fn any_5xx_is_retried_on_schedule() {
        for s in [500, 502, 503, 504, 599] {
            assert_eq!(
                classify_status(s, None, now()),
                Verdict::Retryable { retry_after: None }
            );
        }
    }

    #[test]
    fn other_4xx_and_3xx_are_fatal() {
        for s in [301, 302, 304, 400, 401, 403, 404, 410, 418, 422] {
            assert_eq!(classify_status(s, None, now()), Verdict::Fatal, "{s}");
        }
    }

    #[test]
    fn a_429_waits_for_retry_after_in_seconds() {
        assert_eq!(
            classify_status(429, Some("2"), now()),
            Verdict::Retryable {
                retry_after: Some(Duration::from_secs(2))
            }
        );
    }

    #[test]
    fn a_429_waits_for_retry_after_as_http_date() {
        let v = classify_status(429, Some("Sun, 29 Nov 2026 12:01:30 GMT"), now());
        assert_eq!(
            v,
            Verdict::Retryable {
                retry_after: Some(Duration::from_secs(90))
            }
        );
    }

    #[test]
    fn a_429_without_or_with_garbage_retry_after_uses_the_schedule() {
        assert_eq!(
            classify_status(429, None, now()),
            Verdict::Retryable { retry_after: None }
        );
        assert_eq!(
            classify_status(429, Some("soon"), now()),
            Verdict::Retryable { retry_after: None }
        );
    }

    #[test]
    fn an_absurd_retry_after_is_bounded() {
        for v in [
            "10000000000000",
            "99999999999999999999999999",
            "18446744073709551615",
        ] {
            assert_eq!(parse_retry_after(v, now()), Some(MAX_RETRY_AFTER), "{v}");
        }
        assert_eq!(
            parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now()),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(parse_retry_after("-5", now()), None);
        assert_eq!(parse_retry_after("", now()), None);
    }

    proptest::proptest! {
        /// Whatever a receiver answers, classification and the retry decision return a
        /// verdict and a time inside the window, or a dead letter: never a panic.
        #[test]
        fn no_receiver_answer_makes_the_retry_decision_panic(
            status in 0u16..=1000,
            header in proptest::option::of(proptest::prelude::any::<String>()),
            digits in "[0-9]{0,40}",
            use_digits in proptest::prelude::any::<bool>(),
            attempt in 0u32..20,
            offset_secs in -10_000_000_000i64..10_000_000_000i64,
            jitter in proptest::prelude::any::<f64>(),
        ) {
            let policy = crate::core::retry::RetryPolicy::default();
            let header = if use_digits { Some(digits) } else { header };
            let now = now() + chrono::Duration::seconds(offset_secs);
            let verdict = classify_status(status, header.as_deref(), now);
            match policy.next_attempt(verdict, attempt, true, now, now, jitter) {
                crate::core::retry::Next::RetryAt(at) => {
                    proptest::prop_assert!(at >= now);
                    proptest::prop_assert!(at <= now + chrono::Duration::hours(24));
                }
                crate::core::retry::Next::Succeeded => {
                    proptest::prop_assert!((200..300).contains(&status))
                }
                crate::core::retry::Next::DeadLetter => {}
            }
        }
    }

    #[test]
    fn a_past_http_date_means_now() {
        assert_eq!(
            parse_retry_after("Sun, 29 Nov 2026 11:00:00 GMT", now()),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn network_errors_retry_but_a_refused_target_does_not() {
        for e in [
            TransportError::Timeout,
            TransportError::Connect,
            TransportError::Dns,
            TransportError::Tls,
        ] {
            assert_eq!(classify_error(e), Verdict::Retryable { retry_after: None });
        }
        assert_eq!(
            classify_error(TransportError::RefusedTarget),
            Verdict::Fatal
        );
    }
}
