//! Operational notices as people read them: one line per notice (the e-mail's subject
//! and the cabinet's list), an example of each for the event catalogue, and the panel's
//! list of alert addresses.

use serde_json::{json, Value};

/// The notice types: what each means, for the catalogue.
pub const NOTICES: [(&str, &str); 5] = [
    (
        "endpoint.disabled",
        "An endpoint was disabled after failing for too long (notice).",
    ),
    (
        "endpoint.failing",
        "Every attempt to an endpoint has failed for the project's alert threshold (notice; once until it recovers).",
    ),
    (
        "endpoint.recovered",
        "An endpoint told failing delivered successfully again (notice).",
    ),
    (
        "delivery.dead_lettered",
        "Deliveries to an endpoint were dead-lettered: the count and the first ids, at most one notice per endpoint a minute (notice).",
    ),
    (
        "endpoint.certificate_expiring",
        "An endpoint's client certificate expires within 14 days (notice; once per certificate).",
    ),
];

/// The `data` a notice carries, as an example.
pub fn example(kind: &str) -> Option<Value> {
    let url = "https://api.example.com/hooks";
    Some(match kind {
        "endpoint.disabled" => json!({
            "endpoint_id": 42, "url": url, "reason": "every attempt failed", "after_seconds": 432000
        }),
        "endpoint.failing" => json!({
            "endpoint_id": 42, "url": url, "failing_since": "2026-11-30T09:12:04Z", "after_seconds": 900
        }),
        "endpoint.recovered" => json!({ "endpoint_id": 42, "url": url }),
        "delivery.dead_lettered" => json!({
            "endpoint_id": 42, "url": url, "count": 37, "since": "2026-11-30T09:12:04Z",
            "first_event_ids": ["evt_01JD8X0000000000000000AB", "evt_01JD8X0000000000000000AC"]
        }),
        "endpoint.certificate_expiring" => json!({
            "endpoint_id": 42, "url": url, "subject": "CN=posthorn-client",
            "not_after": "2026-12-14T00:00:00Z", "days_left": 9
        }),
        _ => return None,
    })
}

/// One line saying what happened.
pub fn summary(kind: &str, data: &Value) -> String {
    let url = data["url"].as_str().unwrap_or("an endpoint");
    match kind {
        "endpoint.disabled" => format!(
            "{url} was disabled: {}",
            data["reason"].as_str().unwrap_or("it kept failing")
        ),
        "endpoint.failing" => format!(
            "{url} has failed every attempt since {}",
            data["failing_since"]
                .as_str()
                .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok())
                .map_or_else(
                    || "a while".to_string(),
                    |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
                )
        ),
        "endpoint.recovered" => format!("{url} is delivering again"),
        "endpoint.certificate_expiring" => format!(
            "the client certificate of {url} expires in {} days",
            data["days_left"].as_i64().unwrap_or(0)
        ),
        "delivery.dead_lettered" => {
            let n = data["count"].as_i64().unwrap_or(0);
            format!(
                "{n} {} to {url} dead-lettered",
                if n == 1 { "delivery" } else { "deliveries" }
            )
        }
        other => format!("{other} about {url}"),
    }
}

/// Text made safe to place inside HTML elements and quoted attributes.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The project's latest notices as an HTML table, `(kind, data, when: relative,
/// absolute)` newest first; built on the server, so the browser bundle carries none of
/// it. Every piece of text is escaped: notices quote tenants' URLs.
pub fn notices_table(rows: &[(String, Value, String, String)]) -> String {
    if rows.is_empty() {
        return "<p class=\"empty\" data-testid=\"no-notices\">No notices yet. You will see \
                endpoint.failing, endpoint.recovered, endpoint.disabled, \
                endpoint.certificate_expiring and delivery.dead_lettered here.</p>"
            .into();
    }
    let mut html = String::from(
        "<table class=\"grid\" data-testid=\"notices\"><thead><tr><th>Notice</th>\
         <th>What happened</th><th class=\"num\">When</th></tr></thead><tbody>",
    );
    for (kind, data, relative, absolute) in rows {
        let line = escape_html(&summary(kind, data));
        let kind = escape_html(kind);
        html.push_str(&format!(
            "<tr data-testid=\"notice-row\" data-kind=\"{kind}\"><td class=\"mono\">{kind}</td>\
             <td>{line}</td><td class=\"num\" title=\"{}\">{}</td></tr>",
            escape_html(absolute),
            escape_html(relative),
        ));
    }
    html.push_str("</tbody></table>");
    html
}

/// One alert address as the panel lists it.
pub struct AddressRow {
    pub email: String,
    pub confirmed: bool,
    /// The latest mail to it failed for good: (when relative, when absolute, the reply).
    pub failed: Option<(String, String, String)>,
}

/// The project's alert addresses as an HTML table: each one's state and, when its latest
/// mail failed, when and what the mail server answered. Built and escaped on the server
/// like [`notices_table`]: a reply quotes whatever the mail server said.
pub fn addresses_table(rows: &[AddressRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut html = String::from(
        "<table class=\"grid\" data-testid=\"alert-addresses\"><thead><tr><th>Alert e-mail to</th>\
         <th>State</th><th>Last failure</th></tr></thead><tbody>",
    );
    for row in rows {
        let state = if row.confirmed {
            "receiving alerts"
        } else {
            "waiting for confirmation"
        };
        let failure = match &row.failed {
            Some((relative, absolute, reply)) => format!(
                "<span title=\"{}\">{}</span>: <code>{}</code>",
                escape_html(absolute),
                escape_html(relative),
                escape_html(reply)
            ),
            None => String::new(),
        };
        html.push_str(&format!(
            "<tr data-testid=\"alert-address-row\" data-state=\"{}\"><td class=\"mono\">{}</td>\
             <td>{state}</td><td>{failure}</td></tr>",
            if row.confirmed {
                "confirmed"
            } else {
                "waiting"
            },
            escape_html(&row.email),
        ));
    }
    html.push_str("</tbody></table>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_notice_has_an_example_and_reads_as_a_sentence() {
        for (kind, _) in NOTICES {
            let data = example(kind).expect(kind);
            let line = summary(kind, &data);
            assert!(line.contains("https://api.example.com/hooks"), "{line}");
        }
        assert_eq!(
            summary("delivery.dead_lettered", &json!({"url": "u", "count": 1})),
            "1 delivery to u dead-lettered"
        );
    }

    #[test]
    fn a_hostile_url_in_a_notice_stays_text() {
        let url = "https://x.example/<script>alert(1)</script>?a=\"b\"&c='d'";
        let html = notices_table(&[(
            "endpoint.recovered".into(),
            json!({ "url": url }),
            "now".into(),
            "2026".into(),
        )]);
        assert!(!html.contains("<script>"), "{html}");
        assert!(html
            .contains("&lt;script&gt;alert(1)&lt;/script&gt;?a=&quot;b&quot;&amp;c=&#39;d&#39;"));
        assert!(notices_table(&[]).contains("no-notices"));
    }

    #[test]
    fn an_address_row_says_its_state_and_the_servers_reply_as_text() {
        let html = addresses_table(&[
            AddressRow {
                email: "a@example.com".into(),
                confirmed: false,
                failed: None,
            },
            AddressRow {
                email: "b@example.com".into(),
                confirmed: true,
                failed: Some((
                    "2 min ago".into(),
                    "2026".into(),
                    "permanent error (550): <b@example.com> rejected".into(),
                )),
            },
        ]);
        assert!(html.contains("waiting for confirmation"), "{html}");
        assert!(html.contains("receiving alerts"), "{html}");
        assert!(
            html.contains("(550): &lt;b@example.com&gt; rejected"),
            "{html}"
        );
        assert!(addresses_table(&[]).is_empty());
    }

    #[test]
    fn hostile_data_is_only_text() {
        let line = summary("endpoint.recovered", &json!({"url": 7}));
        assert_eq!(line, "an endpoint is delivering again");
    }
}
