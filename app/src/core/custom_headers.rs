//! Per-endpoint custom headers (an auth token the receiver expects, say): checked once
//! here, sent with every attempt, and recorded redacted.

/// Headers Posthorn sets itself; an endpoint cannot override them.
pub const RESERVED: [&str; 6] = [
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
    "x-request-id",
];
pub const RESERVED_PREFIXES: [&str; 4] = ["x-botix-", "webhook-", "x-event-", "x-delivery-"];

pub const REDACTED: &str = "[redacted]";
pub const MAX_HEADERS: usize = 20;
/// Longest name (bytes; names are ASCII tokens) and value (characters).
pub const MAX_NAME: usize = 64;
pub const MAX_VALUE: usize = 1024;

pub fn parse_custom_headers(pairs: &[(String, String)]) -> Result<Vec<(String, String)>, String> {
    if pairs.len() > MAX_HEADERS {
        return Err(format!("at most {MAX_HEADERS} custom headers"));
    }
    pairs
        .iter()
        .map(|(name, value)| {
            let lower = name.to_ascii_lowercase();
            let token = !name.is_empty()
                && name.len() <= MAX_NAME
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token {
                return Err(format!(
                    "`{}` is not a valid header name",
                    name.chars().take(MAX_NAME).collect::<String>()
                ));
            }
            if RESERVED.contains(&lower.as_str())
                || RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p))
            {
                return Err(format!(
                    "`{name}` is set by Posthorn and cannot be overridden"
                ));
            }
            if value.chars().count() > MAX_VALUE || value.bytes().any(|b| b < 0x20 || b == 0x7f) {
                return Err(format!(
                    "the value of `{name}` must be printable and at most {MAX_VALUE} characters"
                ));
            }
            Ok((name.clone(), value.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: &str, v: &str) -> Vec<(String, String)> {
        vec![(n.to_string(), v.to_string())]
    }

    #[test]
    fn ordinary_headers_pass() {
        assert!(parse_custom_headers(&h("Authorization", "Bearer abc")).is_ok());
        assert!(parse_custom_headers(&h("X-Api-Key", "k")).is_ok());
    }

    #[test]
    fn reserved_and_malformed_headers_are_refused() {
        for (n, v) in [
            ("X-Botix-Signature", "x"),
            ("webhook-id", "x"),
            ("Content-Type", "x"),
            ("bad name", "x"),
            ("X-A", "line\nbreak"),
        ] {
            assert!(parse_custom_headers(&h(n, v)).is_err(), "{n}");
        }
    }
}
