//! An endpoint's filter on its card, as HTML built on the server (the browser bundle
//! carries none of it): the filter, the error of the last try to save one, the recent
//! events it kept out and why, a plain form to change it, and the form's "try it on
//! recent events" preview.

use crate::core::EndpointId;
use chrono::{DateTime, Utc};

use crate::core::{
    alerts::escape_html,
    text::{absolute, relative},
};

/// An event as the card lists it.
pub struct CardEvent {
    pub event_id: String,
    pub event_type: String,
    pub created_at: DateTime<Utc>,
    /// Why the filter kept it out (None: it was, or would be, sent).
    pub skipped: Option<String>,
}

/// A filter tried in the form, on the endpoint's recent events.
pub struct Tried {
    /// The events with what the tried filter says of each, or why it does not compile.
    pub outcome: Result<Vec<CardEvent>, String>,
}

pub struct FilterCard<'a> {
    pub id: EndpointId,
    pub filter: Option<&'a str>,
    pub error: Option<&'a str>,
    /// The text last tried or refused, kept in the form in place of the saved filter.
    pub draft: Option<&'a str>,
    pub editable: bool,
    pub save_action: &'a str,
    pub try_action: &'a str,
    /// Recent events this endpoint's filter kept out, with the recorded reason.
    pub kept_out: Vec<CardEvent>,
    pub tried: Option<Tried>,
}

/// How many recent events the card lists, kept out or tried.
pub const LISTED: i64 = 10;

pub fn html(card: &FilterCard<'_>, now: DateTime<Utc>) -> String {
    let mut html = String::new();
    if let Some(f) = card.filter {
        html.push_str(&format!(
            "<span class=\"epfilter\" data-testid=\"endpoint-filter\" title=\"Only events this \
             CEL expression is true for are sent here\">Filter: <code class=\"mono\">{}</code></span>",
            escape_html(f)
        ));
    }
    if !card.kept_out.is_empty() {
        html.push_str(&format!(
            "<details class=\"epfilter-out\"><summary data-testid=\"filtered-out-toggle\">{} \
             recent event{} kept out by the filter</summary>{}</details>",
            card.kept_out.len(),
            if card.kept_out.len() == 1 { "" } else { "s" },
            table(&card.kept_out, "filtered-out", now)
        ));
    }
    if let Some(error) = card.error {
        html.push_str(&refusal(error, " data-testid=\"filter-error\""));
    }
    if !card.editable {
        return html;
    }
    let open = if card.error.is_some() || card.tried.is_some() {
        " open"
    } else {
        ""
    };
    let verb = if card.filter.is_some() {
        "Change filter…"
    } else {
        "Add a filter…"
    };
    html.push_str(&format!(
        "<details class=\"epcert\"{open}><summary data-testid=\"filter-toggle\">{verb}</summary>\
         <form method=\"post\" action=\"{save}\" data-testid=\"filter-editor\">\
         <input type=\"hidden\" name=\"id\" value=\"{id}\">\
         <textarea name=\"filter\" rows=\"2\" maxlength=\"1024\" spellcheck=\"false\" \
         placeholder='data.amount &gt; 1000 &amp;&amp; data.region == \"eu\"' \
         aria-label=\"Filter (a CEL expression over event, data and subjects; empty: every event)\" \
         data-testid=\"filter-input\">{text}</textarea>\
         <button type=\"submit\" data-testid=\"save-filter-button\">Save filter</button>\
         <button type=\"submit\" formaction=\"{try_}\" class=\"secondary\" \
         data-testid=\"try-filter-button\">Try on recent events</button>\
         <span class=\"muted\">CEL over <code>event</code>, <code>data</code>, \
         <code>subjects</code>; empty removes it.</span></form>",
        save = escape_html(card.save_action),
        try_ = escape_html(card.try_action),
        id = card.id,
        text = escape_html(card.draft.or(card.filter).unwrap_or("")),
    ));
    if let Some(t) = &card.tried {
        html.push_str(&tried(t, now));
    }
    html.push_str("</details>");
    html
}

/// Why a filter was refused, in words; the parser's own message, when there is one,
/// folded under "Details".
fn refusal(error: &str, attrs: &str) -> String {
    let (words, raw) = crate::core::filter::words_and_detail(error);
    let details = raw.map_or(String::new(), |raw| {
        format!(
            " <details class=\"raw\"><summary>Details</summary><code>{}</code></details>",
            escape_html(raw)
        )
    });
    format!(
        "<div class=\"error\" role=\"alert\"{attrs}><p>{}</p>{details}</div>",
        escape_html(words)
    )
}

/// What a filter tried in the form would do to the recent events, or why it does not
/// compile.
pub fn tried(t: &Tried, now: DateTime<Utc>) -> String {
    let mut html = String::from("<div class=\"epfilter-try\" data-testid=\"filter-try-result\">");
    match &t.outcome {
        Err(e) => html.push_str(&refusal(e, "")),
        Ok(events) if events.is_empty() => html.push_str(
            "<p class=\"muted\">No recent events of this endpoint's types to try it on.</p>",
        ),
        Ok(events) => {
            let sent = events.iter().filter(|e| e.skipped.is_none()).count();
            html.push_str(&format!(
                "<p>Of the last {} events of its types, it would send <b>{sent}</b> \
                 and keep out <b>{}</b> (not saved yet).</p>",
                events.len(),
                events.len() - sent
            ));
            html.push_str(&table(events, "filter-try", now));
        }
    }
    html.push_str("</div>");
    html
}

fn table(events: &[CardEvent], testid: &str, now: DateTime<Utc>) -> String {
    let mut rows = String::new();
    for e in events {
        let (class, what) = match &e.skipped {
            None => ("f-sent", "sent"),
            Some(why) => ("f-out", why.as_str()),
        };
        rows.push_str(&format!(
            "<tr data-testid=\"{testid}-row\"><td><time datetime=\"{}\" title=\"{}\">{}</time></td>\
             <td class=\"mono\">{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
            e.created_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            absolute(e.created_at),
            relative(e.created_at, now),
            escape_html(&e.event_id),
            escape_html(&e.event_type),
            escape_html(what),
        ));
    }
    format!(
        "<table class=\"dense epfilter-table\"><thead><tr><th>When</th><th>Event</th>\
         <th>Type</th><th>Filter</th></tr></thead><tbody>{rows}</tbody></table>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, skipped: Option<&str>) -> CardEvent {
        CardEvent {
            event_id: id.into(),
            event_type: "a.<b>".into(),
            created_at: Utc::now() - chrono::Duration::minutes(5),
            skipped: skipped.map(str::to_string),
        }
    }

    #[test]
    fn text_is_escaped_and_forms_are_for_editors_only() {
        let card = FilterCard {
            id: EndpointId::new(3),
            filter: Some("data.x == '<script>'"),
            error: Some("filter: bad <i>"),
            draft: Some("data.y > 1"),
            editable: true,
            save_action: "/api/set",
            try_action: "/api/try",
            kept_out: vec![event("evt_1", Some("the filter was false"))],
            tried: Some(Tried {
                outcome: Ok(vec![
                    event("evt_2", None),
                    event("evt_3", Some("the filter failed: no such key: y")),
                ]),
            }),
        };
        let html = html(&card, Utc::now());
        assert!(html.contains("&lt;script&gt;") && !html.contains("<script>"));
        assert!(html.contains("bad &lt;i&gt;") && html.contains("a.&lt;b&gt;"));
        assert!(html.contains("1 recent event kept out"));
        assert!(html.contains("it would send <b>1</b> and keep out <b>1</b>"));
        assert!(html.contains("the filter failed: no such key: y"));
        assert!(
            html.contains(">data.y &gt; 1</textarea>"),
            "the tried text stays in the form"
        );
        assert!(html.contains("5m ago"));
        let viewer = super::html(
            &FilterCard {
                editable: false,
                tried: None,
                ..card
            },
            Utc::now(),
        );
        assert!(!viewer.contains("<form") && viewer.contains("endpoint-filter"));
    }
}
