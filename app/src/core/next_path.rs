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

/// Where a plain form returns to: the page it was sent from (`referer`, a URL of this
/// site, else the endpoints page) without an earlier form's error, and with this one's
/// (`cert_endpoint`, `cert_error`) when there is one.
pub fn with_cert_error(referer: &str, error: Option<(i64, String)>) -> String {
    let notes: Vec<(&str, String)> = match error {
        Some((id, message)) => vec![
            ("cert_endpoint", id.to_string()),
            ("cert_error", message.chars().take(300).collect()),
        ],
        None => Vec::new(),
    };
    back_with(referer, &notes)
}

/// What the card forms leave in the page's address for the page to show.
const CARD_NOTES: [&str; 6] = [
    "cert_error",
    "cert_endpoint",
    "filter_error",
    "filter_endpoint",
    "try_endpoint",
    "try_filter",
];

/// The page a plain form was sent from (as [`with_cert_error`]), with `notes` in place
/// of whatever an earlier card form left there.
pub fn back_with(referer: &str, notes: &[(&str, String)]) -> String {
    let base = url::Url::parse("http://posthorn.invalid").expect("a base URL");
    let page = base
        .join(referer)
        .ok()
        .filter(|u| safe_next(u.path()).is_some());
    let Some(mut page) = page else {
        return back_with("/developers/webhooks", notes);
    };
    let kept: Vec<(String, String)> = page
        .query_pairs()
        .filter(|(k, _)| !CARD_NOTES.contains(&k.as_ref()))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    page.set_query(None);
    {
        let mut q = page.query_pairs_mut();
        q.extend_pairs(kept);
        for (k, v) in notes {
            q.append_pair(k, v);
        }
    }
    let query = page.query().filter(|q| !q.is_empty());
    match query {
        Some(q) => format!("{}?{q}", page.path()),
        None => page.path().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_returns_to_its_page_with_its_own_error_only() {
        assert_eq!(
            with_cert_error(
                "http://h:3000/developers/webhooks?project=4&cert_endpoint=1&cert_error=old",
                None
            ),
            "/developers/webhooks?project=4"
        );
        assert_eq!(
            with_cert_error(
                "http://h:3000/developers/webhooks",
                Some((7, "bad key & more".into()))
            ),
            "/developers/webhooks?cert_endpoint=7&cert_error=bad+key+%26+more"
        );
        // Only the path is kept: another origin in the header goes nowhere but here.
        assert_eq!(with_cert_error("//evil.example/x", None), "/x");
        assert_eq!(
            with_cert_error("http://h/login?next=/x", None),
            "/developers/webhooks"
        );
    }

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
