//! "Copy as curl": a shell command that sends the same request again.

use base64::{engine::general_purpose::STANDARD, Engine as _};

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Headers curl would add on its own are blanked when the original lacked them, so the
/// replayed request carries exactly the captured headers.
const CURL_DEFAULTS: [&str; 3] = ["accept", "user-agent", "content-type"];

pub fn curl_command(method: &str, url: &str, headers: &[(String, String)], body: &str) -> String {
    curl_bytes(method, url, headers, body.as_bytes())
}

pub fn curl_bytes(method: &str, url: &str, headers: &[(String, String)], body: &[u8]) -> String {
    let mut cmd = String::new();
    let binary = std::str::from_utf8(body).is_err();
    if binary {
        cmd.push_str(&format!(
            "printf %s {} | base64 -d | ",
            quote(&STANDARD.encode(body))
        ));
    }
    cmd.push_str(&format!("curl -sS -X {} {}", quote(method), quote(url)));
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if matches!(
            lower.as_str(),
            "content-length" | "host" | "transfer-encoding" | "connection"
        ) {
            continue;
        }
        cmd.push_str(&format!(" \\\n  -H {}", quote(&format!("{name}: {value}"))));
    }
    for default in CURL_DEFAULTS {
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(default))
            && (default != "content-type" || !body.is_empty())
        {
            cmd.push_str(&format!(" \\\n  -H {}", quote(&format!("{default}:"))));
        }
    }
    if binary {
        cmd.push_str(" \\\n  --data-binary @-");
    } else if !body.is_empty() {
        cmd.push_str(&format!(
            " \\\n  --data-binary {}",
            quote(std::str::from_utf8(body).unwrap_or_default())
        ));
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_stays_quoted() {
        let c = curl_command(
            "POST",
            "http://x/y",
            &[("X-A".into(), "it's".into())],
            r#"{"a":"'; rm -rf /"}"#,
        );
        assert!(c.contains(r"-H 'X-A: it'\''s'"));
        assert!(c.contains(r#"--data-binary '{"a":"'\''; rm -rf /"}'"#));
    }

    #[test]
    fn binary_bodies_go_through_base64() {
        let c = curl_bytes("PUT", "http://x", &[], &[0, 159, 146, 150]);
        assert!(c.starts_with("printf %s 'AJ+Slg==' | base64 -d | curl"));
        assert!(c.ends_with("--data-binary @-"));
    }

    #[test]
    fn curl_defaults_are_blanked_when_absent() {
        let c = curl_command("GET", "http://x", &[("User-Agent".into(), "me".into())], "");
        assert!(c.contains("-H 'accept:'"));
        assert!(!c.contains("-H 'user-agent:'"));
        assert!(!c.contains("content-type"));
    }
}
