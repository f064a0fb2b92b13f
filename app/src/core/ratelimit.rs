//! Rate-limit arithmetic for the public API: a fixed window per calendar minute.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    Trial,
    Business,
}

impl Plan {
    pub fn parse(s: &str) -> Option<Plan> {
        match s {
            "trial" => Some(Plan::Trial),
            "business" => Some(Plan::Business),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Trial => "trial",
            Plan::Business => "business",
        }
    }

    pub fn per_minute(self) -> u32 {
        match self {
            Plan::Trial => 30,
            Plan::Business => 2000,
        }
    }
}

/// The headers' numbers after counting one request as the `count`-th of its minute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds at the end of the current calendar minute.
    pub reset: i64,
    pub allowed: bool,
}

pub fn window_start(now_unix: i64) -> i64 {
    now_unix - now_unix.rem_euclid(60)
}

pub fn quota(limit: u32, count: u32, now_unix: i64) -> Quota {
    let reset = window_start(now_unix) + 60;
    Quota {
        limit,
        remaining: limit.saturating_sub(count),
        reset,
        allowed: count <= limit,
    }
}

/// Seconds to wait when refused: until the window ends, at least 1.
pub fn retry_after(q: &Quota, now_unix: i64) -> i64 {
    (q.reset - now_unix).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_of_thirty_leaves_twenty_nine() {
        let q = quota(30, 1, 120);
        assert_eq!((q.remaining, q.allowed, q.reset), (29, true, 180));
    }

    #[test]
    fn the_thirty_first_is_refused_until_the_minute_ends() {
        let q = quota(30, 31, 125);
        assert!(!q.allowed);
        assert_eq!(q.remaining, 0);
        assert_eq!(retry_after(&q, 125), 55);
    }

    #[test]
    fn the_window_is_the_calendar_minute() {
        assert_eq!(window_start(179), 120);
        assert_eq!(window_start(180), 180);
    }
}
