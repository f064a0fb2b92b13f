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

/// Requests per key per calendar minute, by plan, as the operator sets them
/// (`POSTHORN_PLAN_LIMITS`, e.g. `trial=30,business=2000`); the defaults are the product
/// description's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanLimits {
    pub trial: u32,
    pub business: u32,
}

impl Default for PlanLimits {
    fn default() -> Self {
        PlanLimits {
            trial: Plan::Trial.per_minute(),
            business: Plan::Business.per_minute(),
        }
    }
}

impl PlanLimits {
    pub fn per_minute(&self, plan: Plan) -> u32 {
        match plan {
            Plan::Trial => self.trial,
            Plan::Business => self.business,
        }
    }

    /// `trial=30,business=2000`; a plan left out keeps its default.
    pub fn parse(text: &str) -> Result<PlanLimits, String> {
        let mut limits = PlanLimits::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` is not plan=limit"))?;
            let value: u32 = value
                .trim()
                .parse()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("`{value}` is not a positive number"))?;
            match Plan::parse(name.trim()) {
                Some(Plan::Trial) => limits.trial = value,
                Some(Plan::Business) => limits.business = value,
                None => return Err(format!("unknown plan `{}` (trial, business)", name.trim())),
            }
        }
        Ok(limits)
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

/// The key a source address is counted under: the address itself for IPv4, its /64 for
/// IPv6 (one subscriber usually holds a whole /64, so per-address counts mean nothing).
pub fn address_bucket(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// What a sign-in attempt may do, decided from the failures already counted in this
/// 15-minute window (this attempt included: it is counted before the password is
/// checked, so a burst of parallel guesses cannot outrun the count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignInGate {
    Go,
    /// Check the password after this wait: the account is under attack, its owner is
    /// slowed down, never locked out.
    After(std::time::Duration),
    /// Refused without checking: this address has guessed too often.
    Refuse,
}

/// Inspector bins one address may make per minute, unless `POSTHORN_BIN_CREATE_RATE_LIMIT`
/// says otherwise.
pub const BIN_CREATIONS_PER_MINUTE: u32 = 30;

/// Guesses one address may make for one account, and for all accounts, per window.
pub const SIGN_IN_PER_ADDRESS_AND_ACCOUNT: u32 = 10;
pub const SIGN_IN_PER_ADDRESS: u32 = 30;
/// Failures of one account (from anywhere) before its sign-ins start to wait.
pub const SIGN_IN_FREE_PER_ACCOUNT: u32 = 5;
/// Seconds in one sign-in counting window.
pub const SIGN_IN_WINDOW_SECS: i64 = 900;

pub fn sign_in_gate(
    per_address: u32,
    per_address_and_account: u32,
    per_account: u32,
) -> SignInGate {
    if per_address > SIGN_IN_PER_ADDRESS
        || per_address_and_account > SIGN_IN_PER_ADDRESS_AND_ACCOUNT
    {
        return SignInGate::Refuse;
    }
    if per_account > SIGN_IN_FREE_PER_ACCOUNT {
        let over = (per_account - SIGN_IN_FREE_PER_ACCOUNT).min(12) as u64;
        return SignInGate::After(std::time::Duration::from_millis(250 * over));
    }
    SignInGate::Go
}

#[cfg(test)]
mod sign_in_tests {
    use super::*;

    #[test]
    fn plan_limits_are_read_from_the_setting() {
        assert_eq!(PlanLimits::parse("").unwrap(), PlanLimits::default());
        let l = PlanLimits::parse("business=20000, trial=60").unwrap();
        assert_eq!(
            (l.per_minute(Plan::Trial), l.per_minute(Plan::Business)),
            (60, 20000)
        );
        assert!(PlanLimits::parse("gold=5").is_err());
        assert!(PlanLimits::parse("trial=0").is_err());
        assert!(PlanLimits::parse("trial").is_err());
    }

    #[test]
    fn ipv6_addresses_count_by_their_64() {
        let a = address_bucket("2001:db8:1:2:aaaa::1".parse().unwrap());
        let b = address_bucket("2001:db8:1:2:bbbb::9".parse().unwrap());
        assert_eq!(a, b);
        assert_ne!(a, address_bucket("2001:db8:1:3::1".parse().unwrap()));
        assert_eq!(
            address_bucket("::ffff:10.0.0.1".parse().unwrap()),
            "10.0.0.1"
        );
    }

    #[test]
    fn an_attacked_account_slows_down_but_never_locks_its_owner_out() {
        assert_eq!(sign_in_gate(1, 1, 1), SignInGate::Go);
        // Thousands of failures from elsewhere: the owner's own address still gets in, slowly.
        assert_eq!(
            sign_in_gate(1, 1, 5000),
            SignInGate::After(std::time::Duration::from_secs(3))
        );
        assert_eq!(sign_in_gate(1, 11, 11), SignInGate::Refuse);
        assert_eq!(sign_in_gate(31, 1, 1), SignInGate::Refuse);
    }
}
