//! What the deliveries search box finds: an event id or a request id, typed in any case,
//! whole or by a prefix of at least [`MIN_PREFIX`] characters. Ids are `evt_`/`req_` and
//! upper-case Crockford base 32 (ULID), so a typed id is normalised to that before it is
//! compared, and a prefix becomes a range `[lo, hi)` an index can walk.

/// The shortest prefix searched for (`evt_` and four more, or eight of the id alone).
pub const MIN_PREFIX: usize = 8;

/// The id alphabet, in sort order (the same in the `C` and in linguistic collations).
const ALPHABET: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Which ids a search compares with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    Event,
    Request,
    /// No `evt_`/`req_` given: either.
    Either,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdSearch {
    /// A whole id.
    Exact(Column, String),
    /// Ids from `lo` (included) to `hi` (excluded); for `Either`, without their prefix.
    Prefix(Column, String, String),
    /// Too short, or not an id: nothing can match.
    Nothing(String),
}

pub fn parse(typed: &str) -> IdSearch {
    let typed = typed.trim();
    let lower = typed.to_ascii_lowercase();
    let (column, tag, rest) = if let Some(rest) = lower.strip_prefix("evt_") {
        (Column::Event, "evt_", rest)
    } else if let Some(rest) = lower.strip_prefix("req_") {
        (Column::Request, "req_", rest)
    } else {
        (Column::Either, "", lower.as_str())
    };
    let rest = rest.to_ascii_uppercase();
    if rest.is_empty() || !rest.chars().all(|c| ALPHABET.contains(c)) {
        return IdSearch::Nothing(format!(
            "“{typed}” is not an event id (evt_…) or a request id (req_…)."
        ));
    }
    let whole = match column {
        Column::Event => rest.len() == 24,
        Column::Request => rest.len() == 26,
        Column::Either => false,
    };
    if whole {
        return IdSearch::Exact(column, format!("{tag}{rest}"));
    }
    if tag.len() + rest.len() < MIN_PREFIX || rest.len() > 26 {
        return IdSearch::Nothing(format!(
            "Type at least {MIN_PREFIX} characters of an id (evt_… or req_…), or all of it."
        ));
    }
    let lo = format!("{tag}{rest}");
    match successor(&rest) {
        Some(next) => IdSearch::Prefix(column, lo, format!("{tag}{next}")),
        // All `Z`s: every id from `lo` on.
        None => IdSearch::Prefix(column, lo, format!("{tag}~")),
    }
}

/// The smallest string of the alphabet after every string that starts with `s`.
fn successor(s: &str) -> Option<String> {
    let mut chars: Vec<char> = s.chars().collect();
    while let Some(last) = chars.pop() {
        let i = ALPHABET.find(last)?;
        if let Some(next) = ALPHABET[i + 1..].chars().next() {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_id_is_found_in_any_case() {
        assert_eq!(
            parse(" EVT_01m92ke83h6bkbcz3vwp99vx "),
            IdSearch::Exact(Column::Event, "evt_01M92KE83H6BKBCZ3VWP99VX".into())
        );
        assert_eq!(
            parse("req_01m92ke83h1b2t7dcwszsnjkfh"),
            IdSearch::Exact(Column::Request, "req_01M92KE83H1B2T7DCWSZSNJKFH".into())
        );
    }

    #[test]
    fn a_prefix_is_a_range_and_a_short_one_is_refused_with_a_reason() {
        assert_eq!(
            parse("evt_01m9"),
            IdSearch::Prefix(Column::Event, "evt_01M9".into(), "evt_01MA".into())
        );
        assert_eq!(
            parse("req_01M92KEZ"),
            IdSearch::Prefix(Column::Request, "req_01M92KEZ".into(), "req_01M92KF".into())
        );
        assert_eq!(
            parse("01m92ke8"),
            IdSearch::Prefix(Column::Either, "01M92KE8".into(), "01M92KE9".into())
        );
        assert!(matches!(parse("evt_01"), IdSearch::Nothing(m) if m.contains("at least 8")));
        assert!(
            matches!(parse("hello world"), IdSearch::Nothing(m) if m.contains("not an event id"))
        );
        assert!(matches!(parse("evt_0%"), IdSearch::Nothing(_)));
    }
}
