//! The automatic retry schedule: which attempt comes next, and when.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::classify::Verdict;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay before automatic retry n (1-based), counted from the previous attempt.
    pub schedule: Vec<Duration>,
    /// No automatic attempt is scheduled later than this after the first one.
    pub max_window: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            schedule: [30, 300, 1800, 7200, 21600]
                .map(Duration::from_secs)
                .to_vec(),
            max_window: Duration::from_secs(24 * 3600),
        }
    }
}

/// What becomes of an event's delivery to one endpoint after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Succeeded,
    RetryAt(DateTime<Utc>),
    DeadLetter,
}

impl RetryPolicy {
    /// `attempt` is the 1-based number of the attempt that just finished, `chain_start`
    /// when the first attempt was made, `jitter` a random number in [0, 1).
    /// Only automatic attempts chain; manual, redirect and test attempts pass `chains = false`.
    pub fn next_attempt(
        &self,
        verdict: Verdict,
        attempt: u32,
        chains: bool,
        chain_start: DateTime<Utc>,
        finished_at: DateTime<Utc>,
        jitter: f64,
    ) -> Next {
        let retry_after = match verdict {
            Verdict::Succeeded => return Next::Succeeded,
            Verdict::Fatal => return Next::DeadLetter,
            Verdict::Retryable { retry_after } => retry_after,
        };
        if !chains {
            return Next::DeadLetter;
        }
        let Some(step) = self.schedule.get(attempt.saturating_sub(1) as usize) else {
            return Next::DeadLetter;
        };
        // Every addition below is checked: `Retry-After` comes from the receiver, and an
        // absurd one must end the chain, never overflow the clock.
        let Some(window_end) = chrono::Duration::from_std(self.max_window)
            .ok()
            .and_then(|w| chain_start.checked_add_signed(w))
        else {
            return Next::DeadLetter;
        };
        // Jitter spreads a thundering herd; a receiver's Retry-After is honoured exactly.
        let delay = match retry_after {
            Some(wait) => wait,
            None => {
                let jitter = if jitter.is_finite() {
                    jitter.clamp(0.0, 1.0)
                } else {
                    0.0
                };
                step.checked_add(step.mul_f64(0.1 * jitter))
                    .unwrap_or(*step)
            }
        };
        let at = chrono::Duration::from_std(delay)
            .ok()
            .and_then(|d| finished_at.checked_add_signed(d));
        match at {
            Some(at) if at <= window_end => Next::RetryAt(at),
            _ => Next::DeadLetter,
        }
    }

    /// The most automatic attempts an event gets: the first plus one per step.
    pub fn max_attempts(&self) -> usize {
        self.schedule.len() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
    }
    const RETRY: Verdict = Verdict::Retryable { retry_after: None };

    #[test]
    fn success_ends_the_chain() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.next_attempt(Verdict::Succeeded, 1, true, t0(), t0(), 0.0),
            Next::Succeeded
        );
    }

    #[test]
    fn the_default_schedule_gives_six_attempts() {
        let p = RetryPolicy::default();
        assert_eq!(p.max_attempts(), 6);
        let mut at = t0();
        let expected = [30, 300, 1800, 7200, 21600];
        for (i, secs) in expected.iter().enumerate() {
            match p.next_attempt(RETRY, i as u32 + 1, true, t0(), at, 0.0) {
                Next::RetryAt(next) => {
                    assert_eq!((next - at).num_seconds(), *secs);
                    at = next;
                }
                other => panic!("attempt {} gave {other:?}", i + 1),
            }
        }
        assert_eq!(
            p.next_attempt(RETRY, 6, true, t0(), at, 0.0),
            Next::DeadLetter
        );
    }

    #[test]
    fn jitter_adds_at_most_ten_percent() {
        let p = RetryPolicy::default();
        let Next::RetryAt(at) = p.next_attempt(RETRY, 1, true, t0(), t0(), 0.999) else {
            panic!()
        };
        let ms = (at - t0()).num_milliseconds();
        assert!((30_000..=33_000).contains(&ms), "{ms}");
    }

    #[test]
    fn a_429_waits_for_retry_after_without_jitter() {
        let p = RetryPolicy::default();
        let v = Verdict::Retryable {
            retry_after: Some(Duration::from_secs(2)),
        };
        assert_eq!(
            p.next_attempt(v, 1, true, t0(), t0(), 0.9),
            Next::RetryAt(t0() + chrono::Duration::seconds(2))
        );
    }

    #[test]
    fn a_429_still_uses_up_a_step() {
        let p = RetryPolicy {
            schedule: vec![Duration::from_secs(1)],
            ..Default::default()
        };
        let v = Verdict::Retryable {
            retry_after: Some(Duration::from_secs(2)),
        };
        assert!(matches!(
            p.next_attempt(v, 1, true, t0(), t0(), 0.0),
            Next::RetryAt(_)
        ));
        assert_eq!(
            p.next_attempt(v, 2, true, t0(), t0(), 0.0),
            Next::DeadLetter
        );
    }

    #[test]
    fn fatal_verdicts_dead_letter_at_once() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.next_attempt(Verdict::Fatal, 1, true, t0(), t0(), 0.0),
            Next::DeadLetter
        );
    }

    #[test]
    fn past_the_window_is_dead_letter() {
        let p = RetryPolicy {
            max_window: Duration::from_secs(60),
            ..Default::default()
        };
        let late = t0() + chrono::Duration::seconds(45);
        assert_eq!(
            p.next_attempt(RETRY, 1, true, t0(), late, 0.0),
            Next::DeadLetter
        );
        assert!(matches!(
            p.next_attempt(RETRY, 1, true, t0(), t0(), 0.0),
            Next::RetryAt(_)
        ));
    }

    #[test]
    fn an_absurd_retry_after_dead_letters_instead_of_overflowing() {
        let p = RetryPolicy::default();
        for secs in [10_000_000_000_000u64, u64::MAX / 1000, u64::MAX] {
            let v = Verdict::Retryable {
                retry_after: Some(Duration::from_secs(secs)),
            };
            assert_eq!(
                p.next_attempt(v, 1, true, t0(), t0(), 0.5),
                Next::DeadLetter,
                "{secs}"
            );
        }
    }

    #[test]
    fn a_retry_after_inside_the_window_is_kept_exactly() {
        let p = RetryPolicy::default();
        let v = Verdict::Retryable {
            retry_after: Some(Duration::from_secs(23 * 3600)),
        };
        assert_eq!(
            p.next_attempt(v, 1, true, t0(), t0(), 0.5),
            Next::RetryAt(t0() + chrono::Duration::hours(23))
        );
    }

    #[test]
    fn times_at_the_end_of_the_calendar_do_not_panic() {
        let p = RetryPolicy {
            max_window: Duration::MAX,
            ..Default::default()
        };
        let end = DateTime::<Utc>::MAX_UTC;
        assert_eq!(
            p.next_attempt(RETRY, 1, true, end, end, f64::NAN),
            Next::DeadLetter
        );
    }

    #[test]
    fn manual_attempts_never_chain() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.next_attempt(RETRY, 2, false, t0(), t0(), 0.0),
            Next::DeadLetter
        );
    }
}
