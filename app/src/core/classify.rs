//! What an attempt's result means for the event: done, try again, or give up.

use std::time::Duration;

use chrono::{DateTime, Utc};

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
    pub fn kind(self) -> &'static str {
        match self {
            TransportError::Timeout => "timeout",
            TransportError::Connect => "connect",
            TransportError::Dns => "dns",
            TransportError::Tls => "tls",
            TransportError::RefusedTarget => "refused_target",
            TransportError::Other => "io",
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

/// `Retry-After` as delay-seconds or an HTTP-date; a date in the past means "now".
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let at: DateTime<Utc> = at.into();
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
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
