//! Who an inspector capture counts against. A stranger's capture counts against its
//! source address (IPv4 /32, IPv6 /64); Posthorn's own deliveries to its bins (Redirects,
//! endpoints pointed at bins) count against the project that sent them, whatever address
//! they arrive from (behind a proxy, everyone's is the proxy's). The dispatcher marks
//! those with a pass only the installation's key can make, bound to the bin, the
//! attempt and the minute, so a stranger can neither forge one nor reuse one elsewhere.

use crate::core::ProjectId;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::ratelimit::address_bucket;

/// The header carrying the dispatcher's pass. The inspector removes it from what it
/// captures: a bin shows what a receiver would get.
pub const DISPATCH_PASS_HEADER: &str = "x-posthorn-dispatch";

/// How far a pass's timestamp may be from the inspector's clock, in seconds.
pub const PASS_TOLERANCE_SECS: i64 = 300;

/// Where a capture came from, for its rate limit and its share of the storage budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureSource {
    /// A request from anywhere: its address's bucket (`203.0.113.7`, `2001:db8:1:2::/64`).
    Address(String),
    /// The dispatcher delivering for this project.
    Project(i64),
}

impl CaptureSource {
    pub fn address(ip: std::net::IpAddr) -> CaptureSource {
        CaptureSource::Address(address_bucket(ip))
    }

    /// The name its stored bytes are counted under.
    pub fn usage_key(&self) -> String {
        match self {
            CaptureSource::Address(a) => format!("addr:{a}"),
            CaptureSource::Project(p) => format!("project:{p}"),
        }
    }

    /// The per-minute counter its captures are counted in.
    pub fn rate_bucket(&self) -> String {
        match self {
            CaptureSource::Address(a) => format!("capture:{a}"),
            CaptureSource::Project(p) => format!("capture:project:{p}"),
        }
    }
}

/// The storage a capture may take: up to `total` bytes in all bins together, and up to
/// `per_source` bytes held by its own source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageLimits {
    pub total: i64,
    pub per_source: i64,
}

/// Limits for a capture from `source`, given the inspector's `budget`, the share one
/// source may hold and the part of the budget kept for Posthorn's own deliveries (both in
/// percent): strangers stop short of that part, so Redirects still land when addresses
/// have filled the rest.
pub fn storage_limits(
    source: &CaptureSource,
    budget: i64,
    share_percent: u8,
    reserve_percent: u8,
) -> StorageLimits {
    let part = |percent: u8| budget.saturating_mul(i64::from(percent)) / 100;
    let total = match source {
        CaptureSource::Address(_) => budget - part(reserve_percent),
        CaptureSource::Project(_) => budget,
    };
    StorageLimits {
        total,
        per_source: part(share_percent),
    }
}

fn mac(
    key: &[u8],
    project_id: ProjectId,
    timestamp: i64,
    bin_id: &str,
    request_id: &str,
) -> Hmac<Sha256> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("hmac takes any key length");
    mac.update(
        format!("posthorn-dispatch.v1.{project_id}.{timestamp}.{bin_id}.{request_id}").as_bytes(),
    );
    mac
}

/// The pass for one attempt to bin `bin_id`: `v1,{project},{timestamp},{hex HMAC}`.
pub fn dispatch_pass(
    key: &[u8],
    project_id: ProjectId,
    timestamp: i64,
    bin_id: &str,
    request_id: &str,
) -> String {
    let tag = mac(key, project_id, timestamp, bin_id, request_id)
        .finalize()
        .into_bytes();
    format!("v1,{project_id},{timestamp},{}", hex::encode(tag))
}

/// The project a pass speaks for, if it is genuine, for this bin and attempt, and fresh.
/// The comparison takes constant time.
pub fn check_dispatch_pass(
    key: &[u8],
    pass: &str,
    bin_id: &str,
    request_id: &str,
    now: i64,
) -> Option<ProjectId> {
    let mut parts = pass.trim().splitn(4, ',');
    if parts.next()? != "v1" {
        return None;
    }
    let project_id: ProjectId = parts.next()?.parse().ok()?;
    let timestamp: i64 = parts.next()?.parse().ok()?;
    let tag = hex::decode(parts.next()?).ok()?;
    if (now - timestamp).abs() > PASS_TOLERANCE_SECS {
        return None;
    }
    mac(key, project_id, timestamp, bin_id, request_id)
        .verify_slice(&tag)
        .ok()
        .map(|_| project_id)
}

/// The bin a URL path addresses (`/r/{id}` or `/r/{id}/…`).
pub fn bin_id_of_path(path: &str) -> Option<&str> {
    path.strip_prefix("/r/")?
        .split('/')
        .next()
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_pass_speaks_for_its_project_on_its_bin_and_attempt_only() {
        let pass = dispatch_pass(KEY, ProjectId::new(42), 1_000, "bin1", "req_a");
        assert_eq!(
            check_dispatch_pass(KEY, &pass, "bin1", "req_a", 1_010),
            Some(ProjectId::new(42))
        );
        assert_eq!(
            check_dispatch_pass(KEY, &pass, "bin2", "req_a", 1_010),
            None
        );
        assert_eq!(
            check_dispatch_pass(KEY, &pass, "bin1", "req_b", 1_010),
            None
        );
        assert_eq!(
            check_dispatch_pass(b"another key", &pass, "bin1", "req_a", 1_010),
            None
        );
        let other_project = pass.replacen("v1,42,", "v1,43,", 1);
        assert_eq!(
            check_dispatch_pass(KEY, &other_project, "bin1", "req_a", 1_010),
            None
        );
    }

    #[test]
    fn a_stale_or_malformed_pass_is_refused() {
        let pass = dispatch_pass(KEY, ProjectId::new(42), 1_000, "bin1", "req_a");
        assert_eq!(
            check_dispatch_pass(KEY, &pass, "bin1", "req_a", 1_301),
            None
        );
        assert_eq!(check_dispatch_pass(KEY, &pass, "bin1", "req_a", 699), None);
        for bad in [
            "",
            "v1",
            "v1,42,1000",
            "v2,42,1000,00",
            "v1,x,1000,00",
            "v1,42,1000,zz",
        ] {
            assert_eq!(
                check_dispatch_pass(KEY, bad, "bin1", "req_a", 1_000),
                None,
                "{bad}"
            );
        }
    }

    #[test]
    fn strangers_stop_short_of_the_reserve_and_every_source_at_its_share() {
        let budget = 2048 * 1024 * 1024;
        let stranger = storage_limits(
            &CaptureSource::Address("203.0.113.7".into()),
            budget,
            10,
            10,
        );
        let own = storage_limits(&CaptureSource::Project(7), budget, 10, 10);
        assert_eq!(stranger.total, budget - budget / 10);
        assert_eq!(own.total, budget);
        assert_eq!(
            (stranger.per_source, own.per_source),
            (budget / 10, budget / 10)
        );
        let all = storage_limits(&CaptureSource::Project(7), 1000, 100, 0);
        assert_eq!((all.total, all.per_source), (1000, 1000));
    }

    #[test]
    fn sources_are_counted_apart() {
        let v6 = CaptureSource::address("2001:db8:1:2:3:4:5:6".parse().unwrap());
        assert_eq!(v6.usage_key(), "addr:2001:db8:1:2::/64");
        assert_eq!(
            CaptureSource::address("127.0.0.1".parse().unwrap()).rate_bucket(),
            "capture:127.0.0.1"
        );
        assert_eq!(CaptureSource::Project(9).usage_key(), "project:9");
        assert_eq!(CaptureSource::Project(9).rate_bucket(), "capture:project:9");
    }

    #[test]
    fn the_bin_is_the_first_segment_after_r() {
        assert_eq!(bin_id_of_path("/r/abc"), Some("abc"));
        assert_eq!(bin_id_of_path("/r/abc/deep/path"), Some("abc"));
        assert_eq!(bin_id_of_path("/r/"), None);
        assert_eq!(bin_id_of_path("/x/abc"), None);
    }
}
