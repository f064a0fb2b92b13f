//! Endpoint URLs: absolute http(s), a host name or IPv4 address, an optional port, path
//! and query; no credentials, no fragment. The text is checked against one grammar,
//! written both as code ([`parse_endpoint_url`]) and as the API document's pattern
//! ([`PATTERN`]), so that a client checked against the document is refused nothing it
//! allows and allowed nothing it refuses.

use url::Url;

pub const MAX_LEN: usize = 2048;

/// A host name or IPv4 address, as [`is_host`] reads it (shared with broker URLs).
#[macro_export]
macro_rules! host_pattern {
    () => {
        concat!(
            "(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])",
            "|((?![Xx][Nn]--)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*(?![Xx][Nn]--)[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)"
        )
    };
}

/// An optional `:port` up to 65535, as [`is_port`] reads it.
#[macro_export]
macro_rules! port_pattern {
    () => {
        "(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
    };
}

/// The grammar as an ECMA-262 pattern. The last label of a name starts with a letter
/// (a numeric one would make the name an IPv4 address); no label starts with `xn--`
/// (punycode, which would need checking as such); ports stop at 65535.
pub const PATTERN: &str = concat!(
    "^https?://",
    host_pattern!(),
    port_pattern!(),
    "(/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)*",
    "(\\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$"
);

/// A host name or IPv4 address of the grammar.
pub fn is_host(host: &str) -> bool {
    is_ipv4(host) || is_host_name(host)
}

/// A port of the grammar: up to four digits, or five without a leading zero up to 65535.
pub fn is_port(p: &str) -> bool {
    let digits = !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    digits && (p.len() <= 4 || (p.len() == 5 && !p.starts_with('0') && p <= "65535"))
}

pub fn parse_endpoint_url(text: &str) -> Result<Url, String> {
    if text.len() > MAX_LEN {
        return Err(format!("url is longer than {MAX_LEN} characters"));
    }
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or("url must start with http:// or https://")?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err("url must not carry credentials (user:password@)".into());
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    };
    if !is_host(host) {
        return Err(format!(
            "url: `{}` is not a host name or IPv4 address",
            host.chars().take(64).collect::<String>()
        ));
    }
    if port.is_some_and(|p| !is_port(p)) {
        return Err("url: the port must be a number up to 65535".into());
    }
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    let pchar = |b: u8| b.is_ascii_alphanumeric() || b"._~!$&'()*+,;=:@%-".contains(&b);
    if !path.bytes().all(|b| b == b'/' || pchar(b)) {
        return Err("url: the path may hold letters, digits and ._~!$&'()*+,;=:@%- only".into());
    }
    if !query
        .unwrap_or("")
        .bytes()
        .all(|b| b == b'/' || b == b'?' || pchar(b))
    {
        return Err(
            "url: the query may hold letters, digits and ._~!$&'()*+,;=:@%-/? only (no fragment)"
                .into(),
        );
    }
    let url = Url::parse(text).map_err(|e| format!("url is not a valid URL: {e}"))?;
    debug_assert!(url.host_str().is_some_and(|h| !h.is_empty()));
    Ok(url)
}

fn is_ipv4(host: &str) -> bool {
    let octets: Vec<&str> = host.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|o| {
            !o.is_empty()
                && o.len() <= 3
                && o.bytes().all(|b| b.is_ascii_digit())
                && (o.len() == 1 || !o.starts_with('0'))
                && o.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

fn is_host_name(host: &str) -> bool {
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
            && !l.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
    };
    labels.iter().all(|l| label_ok(l))
        && labels
            .last()
            .is_some_and(|l| l.as_bytes()[0].is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_and_https_pass() {
        for ok in [
            "https://example.com/hooks",
            "http://127.0.0.1:8080/x?y=1",
            "https://a-b.example.io:443/p/a%20th;x=1/?q=1&r=/s?",
            "http://localhost",
            "https://1.example.com",
        ] {
            assert!(parse_endpoint_url(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn other_schemes_and_credentials_fail() {
        assert!(parse_endpoint_url("ftp://example.com")
            .unwrap_err()
            .contains("http"));
        assert!(parse_endpoint_url("https://u:p@example.com")
            .unwrap_err()
            .contains("credentials"));
        for bad in [
            "not a url",
            "file:///etc/passwd",
            " https://example.com",
            "https://example.com/#frag",
            "https://example.com:99999/",
            "https://example.123/",
            "https://999.1.1.1/",
            "https://01.1.1.1/",
            "https://-a.example.com/",
            "https://example.com/a b",
            "https://exa_mple.com/",
            "https://[::1]/",
            "https://",
        ] {
            assert!(parse_endpoint_url(bad).is_err(), "{bad}");
        }
    }

    /// The pattern without its lookaheads, which the `regex` crate does not have; the
    /// tests then leave `xn--` labels out.
    fn plain_pattern() -> String {
        PATTERN.replace("(?![Xx][Nn]--)", "")
    }

    fn has_punycode_label(url: &str) -> bool {
        url.to_ascii_lowercase()
            .split(['/', '.'])
            .any(|l| l.starts_with("xn--"))
    }

    #[test]
    fn punycode_labels_are_refused() {
        assert!(parse_endpoint_url("https://xn--a.example.com/").is_err());
        assert!(parse_endpoint_url("https://example.Xn--a/").is_err());
        assert!(PATTERN.matches("(?![Xx][Nn]--)").count() == 2);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// Every string the document's pattern allows, the code accepts.
        #[test]
        fn what_the_pattern_allows_is_accepted(url in proptest::string::string_regex(&plain_pattern()[1..plain_pattern().len() - 1]).unwrap()) {
            proptest::prop_assume!(!has_punycode_label(&url));
            proptest::prop_assert!(parse_endpoint_url(&url).is_ok(), "{url}: {:?}", parse_endpoint_url(&url).err());
        }

        /// And on URL-like text with mistakes sprinkled in, the two agree both ways.
        #[test]
        fn the_pattern_and_the_code_agree(url in "(https?|ftp|HTTP)://([a-z0-9_-]{0,5}[.:@]?){1,4}(:[0-9]{1,6})?([/?#% a-z0-9_]{0,8}){0,3}") {
            proptest::prop_assume!(!has_punycode_label(&url));
            let pattern = regex::Regex::new(&plain_pattern()).unwrap();
            proptest::prop_assert_eq!(pattern.is_match(&url), parse_endpoint_url(&url).is_ok(), "{}", url);
        }
    }
}

/// The broker an attempt's target names (`redis://… stream=…`, `nats://… subject=…`), in
/// words, or None for an HTTP URL: the dashboard says "published to" and "the broker's
/// answer" for these, and offers no curl.
pub fn broker_of(target_url: &str) -> Option<&'static str> {
    let scheme = target_url.split("://").next()?;
    match scheme {
        "redis" | "rediss" => Some("Redis"),
        "nats" | "tls" => Some("NATS"),
        "mqtt" | "mqtts" => Some("MQTT"),
        "amqp" | "amqps" => Some("RabbitMQ"),
        _ => None,
    }
}

#[cfg(test)]
mod broker_tests {
    #[test]
    fn brokers_are_named_by_their_scheme() {
        assert_eq!(super::broker_of("redis://h:6379/0 stream=s"), Some("Redis"));
        assert_eq!(super::broker_of("nats://h:4222 subject=a.b"), Some("NATS"));
        assert_eq!(super::broker_of("https://h/x"), None);
        assert_eq!(super::broker_of("garbage"), None);
    }
}
