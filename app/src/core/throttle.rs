//! Per-endpoint throttle arithmetic: what a rate limit may be, and what an attempt does
//! when its reserved start slot comes (the slots themselves are booked in the claim).

use std::time::Duration;

/// The highest rate an endpoint may be limited to (attempts per second).
pub const MAX_RATE_LIMIT: i32 = 10_000;

/// How far ahead a claim books start slots; a dispatcher claims again well before
/// the slots it booked run out, so a busy throttled endpoint sees no gaps.
pub const BOOKING_HORIZON: Duration = Duration::from_secs(2);

/// The first slot a claim books lies at least this far ahead, so that every throttled
/// attempt waits for its slot and starts on time however long the claim took to return.
pub const SLOT_LEAD: Duration = Duration::from_millis(50);

/// How late an attempt may start after its slot. A later start would crowd the next
/// slot, so such an attempt goes back to the queue (keeping its place) instead.
pub const START_TOLERANCE: Duration = Duration::from_millis(4);

/// A rate limit from a form field: empty (or "unlimited") clears it.
pub fn parse_rate_limit_text(text: &str) -> Result<Option<i32>, String> {
    let t = text.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("unlimited") {
        return Ok(None);
    }
    let n: i64 = t
        .parse()
        .map_err(|_| format!("rate limit: \"{t}\" is not a whole number of attempts per second"))?;
    check_rate_limit(n).map(Some)
}

/// A rate limit from the API: 1 to [`MAX_RATE_LIMIT`] attempts per second.
pub fn check_rate_limit(n: i64) -> Result<i32, String> {
    if (1..=MAX_RATE_LIMIT as i64).contains(&n) {
        Ok(n as i32)
    } else {
        Err(format!(
            "rate_limit must be between 1 and {MAX_RATE_LIMIT} attempts per second (or null for unlimited)"
        ))
    }
}

/// What an attempt with a reserved start slot does now.
#[derive(Debug, PartialEq, Eq)]
pub enum SlotCheck {
    /// Too early: wait this long.
    Wait(Duration),
    /// Start now.
    Go,
    /// The slot has passed by more than [`START_TOLERANCE`]: hand the attempt back.
    Missed,
}

/// `until_slot`: time from now until the slot (negative when it has passed), in ms.
pub fn check_slot(until_slot_ms: f64) -> SlotCheck {
    if until_slot_ms > 0.0 {
        SlotCheck::Wait(Duration::from_secs_f64(until_slot_ms / 1000.0))
    } else if -until_slot_ms <= START_TOLERANCE.as_secs_f64() * 1000.0 {
        SlotCheck::Go
    } else {
        SlotCheck::Missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_rate_limit_means_unlimited() {
        assert_eq!(parse_rate_limit_text(" "), Ok(None));
        assert_eq!(parse_rate_limit_text("unlimited"), Ok(None));
        assert_eq!(parse_rate_limit_text("5"), Ok(Some(5)));
    }

    #[test]
    fn a_rate_limit_is_a_positive_whole_number_within_bounds() {
        assert!(parse_rate_limit_text("0").is_err());
        assert!(parse_rate_limit_text("-3").is_err());
        assert!(parse_rate_limit_text("2.5").is_err());
        assert!(check_rate_limit(10_001).is_err());
        assert_eq!(check_rate_limit(10_000), Ok(10_000));
    }

    #[test]
    fn an_attempt_waits_for_its_slot_and_gives_up_a_missed_one() {
        assert_eq!(
            check_slot(150.0),
            SlotCheck::Wait(Duration::from_millis(150))
        );
        assert_eq!(check_slot(0.0), SlotCheck::Go);
        assert_eq!(check_slot(-3.0), SlotCheck::Go);
        assert_eq!(check_slot(-50.0), SlotCheck::Missed);
    }
}
