//! What the operator (the platform running Posthorn for its customers) may set on a
//! project, checked before it is stored: the origins that may frame the portal, the
//! brand, its own id for the customer, the overrides of the project's limits, and the
//! portal's roles and link lifetimes (SPEC "Operator API and portal").

use serde_json::Value;

use super::limits::{check_overrides, Limit};

/// The longest origin `frame_ancestors` takes.
pub const MAX_ORIGIN_LEN: usize = 260;
/// The longest retention an operator may ask for; the server's own maximum still applies.
pub const MAX_RETENTION_DAYS: u32 = 3650;
/// How many origins one project may list in `frame_ancestors`.
pub const MAX_FRAME_ANCESTORS: usize = 20;
/// A portal link lives this long unless asked otherwise, and never longer than the max.
pub const PORTAL_LINK_DEFAULT_SECS: i64 = 300;
pub const PORTAL_LINK_MAX_SECS: i64 = 3600;
/// The two overrides that are not counts of things (SPEC "Limits" names the rest).
pub const API_REQUESTS_PER_MINUTE: &str = "api_requests_per_minute";
pub const RETENTION_DAYS: &str = "retention_days";
const MAX_REQUESTS_PER_MINUTE: u64 = 1_000_000;

/// A portal user's standing in the one project their link opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortalRole {
    Owner,
    Member,
    Viewer,
}

impl PortalRole {
    pub fn parse(s: &str) -> Option<PortalRole> {
        match s {
            "owner" => Some(PortalRole::Owner),
            "member" => Some(PortalRole::Member),
            "viewer" => Some(PortalRole::Viewer),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PortalRole::Owner => "owner",
            PortalRole::Member => "member",
            PortalRole::Viewer => "viewer",
        }
    }
}

/// An origin a portal page may be framed by: `https://host[:port]`, or `http://` for
/// `localhost` and `127.0.0.1` only. Nothing that could widen or break the header it
/// goes into: no wildcard, path, query, spaces, quotes or `;`. Returned lower-cased.
pub fn check_origin(origin: &str) -> Result<String, String> {
    let refuse = |why: &str| {
        Err(format!(
            "frame_ancestors: `{origin}` is not an origin ({why})"
        ))
    };
    let lower = origin.to_ascii_lowercase();
    let (scheme, rest) = match lower.split_once("://") {
        Some(pair) => pair,
        None => return refuse("scheme://host[:port]"),
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    if origin.len() > MAX_ORIGIN_LEN {
        return refuse("at most 260 characters");
    }
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        || host.starts_with('.')
        || host.starts_with('-')
    {
        return refuse("a host name without wildcards, paths or spaces");
    }
    if let Some(p) = port {
        match p.parse::<u16>() {
            Ok(n) if n > 0 && !p.starts_with('0') => {}
            _ => return refuse("the port must be 1 to 65535"),
        }
    }
    match scheme {
        "https" => Ok(lower),
        "http" if host == "localhost" || host == "127.0.0.1" => Ok(lower),
        "http" => refuse("http:// only for localhost and 127.0.0.1"),
        _ => refuse("https:// or http://"),
    }
}

/// Every origin checked, duplicates dropped, at most [`MAX_FRAME_ANCESTORS`].
pub fn check_frame_ancestors(origins: &[String]) -> Result<Vec<String>, String> {
    if origins.len() > MAX_FRAME_ANCESTORS {
        return Err(format!(
            "frame_ancestors: at most {MAX_FRAME_ANCESTORS} origins"
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(origins.len());
    for o in origins {
        let o = check_origin(o)?;
        if !out.contains(&o) {
            out.push(o);
        }
    }
    Ok(out)
}

/// A brand's accent: `#rrggbb`.
pub fn check_accent(accent: &str) -> Result<(), String> {
    let ok = accent.len() == 7
        && accent.starts_with('#')
        && accent[1..].bytes().all(|b| b.is_ascii_hexdigit());
    if ok {
        Ok(())
    } else {
        Err(format!("brand.accent: `{accent}` is not a #rrggbb colour"))
    }
}

/// A brand's logo: an https URL of the endpoint URL grammar (the portal's `img-src`
/// allows its origin). Returns the origin to allow.
pub fn check_logo_url(logo: &str) -> Result<String, String> {
    let refuse = || Err(format!("brand.logo_url: `{logo}` is not an https URL"));
    if !logo.starts_with("https://") || super::endpoint_url::parse_endpoint_url(logo).is_err() {
        return refuse();
    }
    let Ok(url) = url::Url::parse(logo) else {
        return refuse();
    };
    Ok(url.origin().ascii_serialization())
}

/// Text an operator names things with (a project, a brand, a portal user): trimmed,
/// 1 to `max` characters, no control characters.
pub fn check_text(field: &str, value: &str, max: usize) -> Result<String, String> {
    let v = value.trim();
    if v.is_empty() || value.chars().count() > max {
        return Err(format!("{field}: 1 to {max} characters"));
    }
    if v.chars().any(char::is_control) {
        return Err(format!("{field}: no control characters"));
    }
    Ok(v.to_string())
}

/// [`check_text`] for a field that may be left out.
pub fn check_optional_text(
    field: &str,
    value: Option<String>,
    max: usize,
) -> Result<Option<String>, String> {
    value.map(|v| check_text(field, &v, max)).transpose()
}

/// The operator's `limits` object: the limits of SPEC "Limits", plus the project's API
/// requests per minute and its retention in days (of which the server's maximum applies).
pub fn check_limit_overrides(overrides: &Value) -> Result<(), String> {
    let Some(map) = overrides.as_object() else {
        return Err("limits: must be an object".into());
    };
    let mut counted = serde_json::Map::new();
    for (name, v) in map {
        let max = match name.as_str() {
            API_REQUESTS_PER_MINUTE => MAX_REQUESTS_PER_MINUTE,
            RETENTION_DAYS => MAX_RETENTION_DAYS as u64,
            _ => {
                counted.insert(name.clone(), v.clone());
                continue;
            }
        };
        match v.as_u64() {
            Some(n) if n >= 1 && n <= max => {}
            _ => return Err(format!("limits.{name}: a whole number from 1 to {max}")),
        }
    }
    check_overrides(&Value::Object(counted))
}

/// One override of the two that are not [`Limit`]s, if set.
pub fn override_of(overrides: &Value, name: &str) -> Option<u32> {
    overrides
        .get(name)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n >= 1)
}

/// A project's history window in days: the operator's `retention_days` if set, never
/// past the server's window (`POSTHORN_RETENTION_DAYS`).
pub fn window_days(overrides: &Value, server_days: u32) -> u32 {
    window_of(override_of(overrides, RETENTION_DAYS), server_days)
}

/// The window of a project whose `retention_days` override is `set`.
pub fn window_of(set: Option<u32>, server_days: u32) -> u32 {
    set.unwrap_or(server_days).min(server_days)
}

/// Every override the operator's `limits` takes: its name, its ceiling and what it bounds.
/// The operator API's `limits` object and its document are built from this table.
pub fn overrides() -> impl Iterator<Item = (&'static str, u64, String)> {
    let counted = Limit::ALL.iter().map(|l| {
        let about = format!(
            "At most this many {} (default {}).",
            l.what(),
            l.default_value()
        );
        (l.name(), u64::from(l.ceiling()), about)
    });
    counted.chain([
        (
            API_REQUESTS_PER_MINUTE,
            MAX_REQUESTS_PER_MINUTE,
            "Public API requests per key per minute, instead of the plan's.".to_string(),
        ),
        (
            RETENTION_DAYS,
            u64::from(MAX_RETENTION_DAYS),
            "Days of delivery history kept, at most the server's `POSTHORN_RETENTION_DAYS`."
                .to_string(),
        ),
    ])
}

/// Every limit's name, as the operator API shows them.
pub fn limit_names() -> impl Iterator<Item = &'static str> {
    overrides().map(|(name, _, _)| name)
}

/// A portal link's lifetime in seconds: the default, or 1 to the maximum.
pub fn link_lifetime(expires_in: Option<i64>) -> Result<i64, String> {
    match expires_in {
        None => Ok(PORTAL_LINK_DEFAULT_SECS),
        Some(n) if (1..=PORTAL_LINK_MAX_SECS).contains(&n) => Ok(n),
        Some(n) => Err(format!(
            "expires_in: 1 to {PORTAL_LINK_MAX_SECS} seconds, not {n}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        for ok in [
            "https://app.example.com",
            "https://app.example.com:8443",
            "http://localhost:3000",
            "http://127.0.0.1:9",
            "HTTPS://App.Example.COM",
        ] {
            assert!(check_origin(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            check_origin("HTTPS://App.Example.COM").unwrap(),
            "https://app.example.com"
        );
        for bad in [
            "https://*.example.com",
            "https://a.example/path",
            "https://a.example/",
            "http://a.example.com",
            "https://a.example; script-src *",
            "https://a example",
            "*",
            "'self'",
            "https://",
            "https://a.example:0",
            "https://a.example:99999",
            "https://a.example?x=1",
            "ftp://a.example",
            "https://user@a.example",
            "https://.example",
        ] {
            assert!(check_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn frame_ancestors_are_bounded_and_deduplicated() {
        let list: Vec<String> = vec!["https://a.example".into(), "https://A.example".into()];
        assert_eq!(check_frame_ancestors(&list).unwrap().len(), 1);
        let many: Vec<String> = (0..21).map(|i| format!("https://a{i}.example")).collect();
        assert!(check_frame_ancestors(&many).is_err());
    }

    #[test]
    fn brands_take_a_colour_and_an_https_logo() {
        assert!(check_accent("#12abEF").is_ok());
        for bad in ["12abef", "#12abe", "#12abeg", "red", "#12abef;x"] {
            assert!(check_accent(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_logo_url("https://cdn.example.com/logo.png").unwrap(),
            "https://cdn.example.com"
        );
        for bad in [
            "http://cdn.example.com/logo.png",
            "javascript:alert(1)",
            "data:image/png;base64,AA",
            "https://u:p@cdn.example.com/x.png",
        ] {
            assert!(check_logo_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_project_window_is_its_own_within_the_servers() {
        assert_eq!(window_days(&json!({}), 14), 14);
        assert_eq!(window_days(&json!({"retention_days": 1}), 14), 1);
        assert_eq!(window_days(&json!({"retention_days": 90}), 14), 14);
    }

    #[test]
    fn overrides_cover_the_limits_the_rate_and_the_retention() {
        assert!(check_limit_overrides(&json!({"endpoints": 10, "retention_days": 7})).is_ok());
        assert!(check_limit_overrides(&json!({"retention_days": 3651})).is_err());
        assert!(check_limit_overrides(&json!({"api_requests_per_minute": 0})).is_err());
        assert!(check_limit_overrides(&json!({"nonsense": 1})).is_err());
        assert!(check_limit_overrides(&json!([1])).is_err());
        assert_eq!(
            override_of(&json!({"retention_days": 3}), RETENTION_DAYS),
            Some(3)
        );
        assert_eq!(limit_names().count(), 9);
    }

    #[test]
    fn links_last_five_minutes_unless_asked_and_never_over_an_hour() {
        assert_eq!(link_lifetime(None), Ok(300));
        assert_eq!(link_lifetime(Some(3600)), Ok(3600));
        assert!(link_lifetime(Some(3601)).is_err());
        assert!(link_lifetime(Some(0)).is_err());
        assert!(check_text("name", "  ", 10).is_err());
        assert!(check_text("name", "a\u{7}", 10).is_err());
        assert_eq!(check_text("name", " Acme ", 10).unwrap(), "Acme");
    }
}
