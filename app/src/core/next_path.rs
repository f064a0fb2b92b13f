//! Where signing in goes next (`/login?next=…`): a path on this site, or nowhere. A
//! value that a browser could read as another origin (`//evil.example`, `/\evil`, a
//! scheme, control characters it would strip first) is refused: no open redirect.

/// The longest `next` kept.
pub const MAX_NEXT: usize = 2048;

/// `next` if it is a same-origin path (with its query), else None.
pub fn safe_next(next: &str) -> Option<&str> {
    let ok = next.len() <= MAX_NEXT
        && next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(|c| c.is_control() || c.is_whitespace())
        // Signing in again is no destination.
        && !next.starts_with("/login");
    ok.then_some(next)
}

/// Where a signed-in user lands: `next` if it is safe, else the cabinet's home.
pub fn landing(next: Option<&str>) -> &str {
    next.and_then(safe_next).unwrap_or("/developers")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_this_site_are_kept_with_their_query() {
        assert_eq!(
            landing(Some("/developers/deliveries?q=evt_01&status=failed")),
            "/developers/deliveries?q=evt_01&status=failed"
        );
        assert_eq!(landing(Some("/inspector/abc")), "/inspector/abc");
        assert_eq!(landing(None), "/developers");
    }

    #[test]
    fn anything_a_browser_could_take_elsewhere_is_refused() {
        for bad in [
            "https://evil.example/",
            "//evil.example/x",
            "/\\evil.example",
            "\\\\evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            " /developers",
            "javascript:alert(1)",
            "developers",
            "",
            "/login?next=/developers",
        ] {
            assert_eq!(landing(Some(bad)), "/developers", "{bad:?}");
        }
        assert_eq!(
            landing(Some(&format!("/{}", "a".repeat(MAX_NEXT)))),
            "/developers"
        );
    }
}
