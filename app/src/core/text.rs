//! Text from the wire that PostgreSQL must store: it refuses U+0000 in `text` and in
//! `jsonb`, so such text is refused with a clear error, or, inside an event's `data`,
//! replaced (the one character a payload cannot keep).

/// Longest endpoint description, in characters.
pub const MAX_DESCRIPTION: usize = 500;

pub fn check_description(d: &str) -> Result<(), String> {
    if d.chars().count() > MAX_DESCRIPTION {
        return Err(format!("description: at most {MAX_DESCRIPTION} characters"));
    }
    no_nul("description", d)
}

/// Refuses U+0000, naming the field.
pub fn no_nul(field: &str, s: &str) -> Result<(), String> {
    if s.contains('\0') {
        return Err(format!("{field}: U+0000 cannot be stored"));
    }
    Ok(())
}

/// Replaces every `\u0000` escape of a JSON text by `\ufffd`. Outside strings valid JSON
/// has no backslash, and inside one an escape is a backslash and what follows it, so
/// walking escapes pairwise finds exactly the NULs (`\\u0000` is a backslash and text).
pub fn replace_nul_escapes(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.contains("u0000") {
        return json.into();
    }
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = &rest[at..];
        if let Some(after) = escape.strip_prefix("\\u0000") {
            out.push_str("\\ufffd");
            rest = after;
        } else {
            // a backslash and the character it escapes
            let len = 1 + escape[1..].chars().next().map_or(0, char::len_utf8);
            out.push_str(&escape[..len]);
            rest = &escape[len..];
        }
    }
    out.push_str(rest);
    out.into()
}

/// Lays a JSON text out as `serde_json::to_string_pretty` would (two-space indents),
/// without parsing it into values: numbers keep their spelling, and the browser bundle
/// needs no JSON value parser for it. `None` when the text is not an object or array,
/// or its brackets or strings do not close.
pub fn indent_json(text: &str) -> Option<String> {
    let t = text.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    fn newline(out: &mut String, depth: usize) {
        out.push('\n');
        (0..depth).for_each(|_| out.push_str("  "));
    }
    let mut out = String::with_capacity(t.len() * 2);
    // The closers still open, innermost last.
    let (mut open, mut in_string, mut escaped) = (Vec::new(), false, false);
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.next_if(|c| c.is_whitespace()).is_some() {}
                let close = if c == '{' { '}' } else { ']' };
                if chars.next_if_eq(&close).is_some() {
                    out.push(close);
                } else {
                    open.push(close);
                    newline(&mut out, open.len());
                }
            }
            '}' | ']' => {
                if open.pop()? != c {
                    return None;
                }
                newline(&mut out, open.len());
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, open.len());
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    (open.is_empty() && !in_string).then_some(out)
}

/// `5m ago`, `in 2h`, `just now`: how long before or after `now`.
pub fn relative(at: chrono::DateTime<chrono::Utc>, now: chrono::DateTime<chrono::Utc>) -> String {
    let secs = (now - at).num_seconds();
    let (n, future) = if secs < 0 {
        (-secs, true)
    } else {
        (secs, false)
    };
    let text = match n {
        0..=4 => return "just now".into(),
        5..=59 => format!("{n}s"),
        60..=3599 => format!("{}m", n / 60),
        3600..=86_399 => format!("{}h", n / 3600),
        _ => format!("{}d", n / 86_400),
    };
    if future {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// `2026-11-30 12:00:00.000 UTC`, written out by hand: chrono's `format` would bring its
/// whole format-string machinery into the browser bundle for this one line.
pub fn absolute(at: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike, Timelike};
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03} UTC",
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.timestamp_subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_escapes_become_replacement_characters_and_nothing_else_changes() {
        let cases = [
            (r#"{"a":"x\u0000y"}"#, r#"{"a":"x\ufffdy"}"#),
            (r#"{"\u0000":1}"#, r#"{"\ufffd":1}"#),
            (r#"{"a":"\\u0000"}"#, r#"{"a":"\\u0000"}"#),
            (r#"{"a":"\\\u0000"}"#, r#"{"a":"\\\ufffd"}"#),
            (r#"{"a":"\u00001"}"#, r#"{"a":"\ufffd1"}"#),
            (r#"{"a":"u0000"}"#, r#"{"a":"u0000"}"#),
        ];
        for (input, want) in cases {
            let got = replace_nul_escapes(input);
            assert_eq!(got, want, "{input}");
            let v: serde_json::Value = serde_json::from_str(&got).unwrap();
            assert!(!v.to_string().contains('\0'));
        }
    }

    #[test]
    fn descriptions_are_bounded() {
        assert!(check_description("Orders to the warehouse").is_ok());
        assert!(check_description(&"é".repeat(MAX_DESCRIPTION)).is_ok());
        assert!(check_description(&"é".repeat(MAX_DESCRIPTION + 1)).is_err());
        assert!(check_description("a\0b").is_err());
    }

    #[test]
    fn json_is_laid_out_as_serde_json_would() {
        for text in [
            r#"{"a":1,"b":[1,2.50,{"c":"x,y:{z}"}],"d":{},"e":[],"f":"q\"uote\\"}"#,
            r#"[ { "k" : null } , true ]"#,
            "{}",
        ] {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            let want = serde_json::to_string_pretty(&v)
                .unwrap()
                .replace("2.5", "2.50");
            assert_eq!(indent_json(text).as_deref(), Some(want.as_str()), "{text}");
        }
        assert_eq!(indent_json("not json"), None);
        assert_eq!(indent_json("{\"a\":[1}}"), None);
        assert_eq!(indent_json("{\"open"), None);
    }
}
