//! An endpoint's client certificate on its card, as HTML built on the server: what is
//! shown of it (subject, expiry), the error of the last try to set it, and plain forms
//! to set or remove it, sent without script. The browser bundle carries none of it.

use crate::core::EndpointId;
use chrono::{DateTime, Utc};

use crate::core::alerts::escape_html;

/// What the card shows for one endpoint.
pub struct CertCard<'a> {
    pub id: EndpointId,
    pub subject: Option<&'a str>,
    pub not_after: Option<DateTime<Utc>>,
    /// The error the page came back with for this endpoint, if any.
    pub error: Option<&'a str>,
    /// The forms, for roles that may edit endpoints.
    pub editable: bool,
    /// Where the forms are sent.
    pub action: &'a str,
    /// The ed25519 public key, when the endpoint signs with ed25519.
    pub public_key: Option<&'a str>,
}

pub fn html(card: &CertCard<'_>, now: DateTime<Utc>) -> String {
    let mut html = String::new();
    if let Some(key) = card.public_key {
        html.push_str(&format!(
            "<span class=\"epscheme\" data-testid=\"signature-scheme\" title=\"Deliveries carry \
             v1a signatures only; receivers verify them with this public key and hold no \
             secret\">Signed with ed25519 · public key <code class=\"mono\" \
             data-testid=\"public-key\">{}</code></span> ",
            escape_html(key)
        ));
    }
    if let (Some(subject), Some(at)) = (card.subject, card.not_after) {
        let days = (at - now).num_days();
        let class = if days < 14 { " warn" } else { "" };
        html.push_str(&format!(
            "<span class=\"epcert-show{class}\" data-testid=\"client-cert\" title=\"Presented to \
             the receiver when it asks for a client certificate (mutual TLS)\">Client \
             certificate: <span class=\"mono\">{}</span> · expires <time datetime=\"{}\">{} \
             ({})</time></span>",
            escape_html(subject),
            at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            at.format("%Y-%m-%d %H:%M UTC"),
            match days {
                d if d < 0 => "expired".to_string(),
                0 => "today".to_string(),
                1 => "in 1 day".to_string(),
                d => format!("in {d} days"),
            },
        ));
    }
    if let Some(error) = card.error {
        html.push_str(&format!(
            "<p class=\"error\" role=\"alert\" data-testid=\"client-cert-error\">{}</p>",
            escape_html(error)
        ));
    }
    if card.editable {
        let (id, action) = (card.id, escape_html(card.action));
        let open = if card.error.is_some() { " open" } else { "" };
        let verb = if card.subject.is_some() {
            "Replace"
        } else {
            "Add"
        };
        html.push_str(&format!(
            "<details class=\"epcert\"{open}><summary data-testid=\"client-cert-toggle\">{verb} \
             client certificate…</summary>\
             <form method=\"post\" action=\"{action}\" data-testid=\"client-cert-editor\">\
             <input type=\"hidden\" name=\"id\" value=\"{id}\">\
             <span class=\"muted\">For receivers that ask for one (PEM; the key is write-only):</span>\
             <textarea name=\"cert\" rows=\"3\" required placeholder=\"-----BEGIN CERTIFICATE-----\" \
             aria-label=\"Client certificate (PEM)\" data-testid=\"client-cert-input\"></textarea>\
             <textarea name=\"key\" rows=\"3\" required placeholder=\"-----BEGIN PRIVATE KEY-----\" \
             aria-label=\"The certificate's private key (PEM)\" autocomplete=\"off\" \
             data-testid=\"client-key-input\"></textarea>\
             <button type=\"submit\" data-testid=\"set-client-cert-button\">Set certificate</button>\
             </form>"
        ));
        if card.subject.is_some() {
            html.push_str(&format!(
                "<form method=\"post\" action=\"{action}\"><input type=\"hidden\" name=\"id\" \
                 value=\"{id}\"><input type=\"hidden\" name=\"cert\" value=\"\"><input \
                 type=\"hidden\" name=\"key\" value=\"\"><button type=\"submit\" class=\"link \
                 danger\" data-testid=\"remove-client-cert-button\">Remove client \
                 certificate</button></form>"
            ));
        }
        html.push_str("</details>");
    }
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_and_error_are_text_and_forms_only_for_editors() {
        let now = Utc::now();
        let card = CertCard {
            id: EndpointId::new(7),
            subject: Some("CN=<script>x</script>"),
            not_after: Some(now + chrono::Duration::days(10) + chrono::Duration::hours(1)),
            error: Some("bad <b>key</b>"),
            editable: true,
            action: "/api/set_client_certificate",
            public_key: Some("whpk_AAAA"),
        };
        let html = html(&card, now);
        assert!(html.contains("CN=&lt;script&gt;x&lt;/script&gt;"));
        assert!(html.contains("bad &lt;b&gt;key&lt;/b&gt;"));
        assert!(html.contains("in 10 days") && html.contains("epcert-show warn"));
        assert!(html.contains("<details class=\"epcert\" open>"));
        assert!(html.contains("remove-client-cert-button"));
        assert!(html.contains("Signed with ed25519 · public key"));
        let viewer = html_of(
            CertCard {
                editable: false,
                ..card
            },
            now,
        );
        assert!(!viewer.contains("<form"));
        let none = html_of(
            CertCard {
                subject: None,
                not_after: None,
                error: None,
                editable: false,
                ..card_for(EndpointId::new(1))
            },
            now,
        );
        assert_eq!(none, "");
    }

    fn html_of(card: CertCard<'_>, now: DateTime<Utc>) -> String {
        html(&card, now)
    }

    fn card_for(id: EndpointId) -> CertCard<'static> {
        CertCard {
            id,
            subject: None,
            not_after: None,
            error: None,
            editable: true,
            action: "/a",
            public_key: None,
        }
    }
}
