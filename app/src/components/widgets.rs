//! Status badges, times, copy buttons.

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::core::status::DeliveryStatus;
pub use crate::core::text::{absolute, relative};

#[component]
pub fn StatusBadge(status: DeliveryStatus) -> impl IntoView {
    view! { <span class=format!("badge badge-{}", status.as_str())>{status.label()}</span> }
}

/// The inspector bin a Redirect's target URL names (`…/r/{id}`).
pub fn bin_of(url: &str) -> Option<String> {
    let path = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = path.find('/').map_or("", |i| &path[i..]);
    let id = path.strip_prefix("/r/")?.split(['/', '?']).next()?;
    (!id.is_empty()).then(|| id.to_string())
}

/// Relative time with the absolute time beside it, in the browser's time zone once the
/// page has hydrated (the server renders UTC, which it says); the exact UTC time is on
/// hover and in the `datetime` attribute.
#[component]
pub fn Time(at: DateTime<Utc>) -> impl IntoView {
    let iso = at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let shown = RwSignal::new(format!("{} UTC", short_time(at, None)));
    // Effects run in the browser only, after hydration: the first render matches the
    // server's, then the local time replaces it.
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| shown.set(short_time(at, Some(local_parts(at)))));
    view! {
        <time datetime=iso title=absolute(at)>{relative(at, Utc::now())}" "
            <span class="abs">{move || shown.get()}</span>
        </time>
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `5 Dec 10:02:03` from (month 0–11, day, hour, minute, second), UTC's when none given.
fn short_time(at: DateTime<Utc>, parts: Option<[u32; 5]>) -> String {
    use chrono::{Datelike, Timelike};
    let [mo, d, h, mi, s] =
        parts.unwrap_or([at.month0(), at.day(), at.hour(), at.minute(), at.second()]);
    format!("{d} {} {h:02}:{mi:02}:{s:02}", MONTHS[mo as usize % 12])
}

/// The time's calendar parts in the browser's zone (its own rules, summer time included).
#[cfg(feature = "hydrate")]
fn local_parts(at: DateTime<Utc>) -> [u32; 5] {
    let d = js_sys::Date::new(&(at.timestamp_millis() as f64).into());
    [
        d.get_month(),
        d.get_date(),
        d.get_hours(),
        d.get_minutes(),
        d.get_seconds(),
    ]
}

/// Runs `tick` every `period` for as long as the calling component lives.
#[cfg(feature = "hydrate")]
pub fn every(period: std::time::Duration, tick: impl Fn() + 'static) {
    let handle = set_interval_with_handle(tick, period);
    on_cleanup(move || {
        if let Ok(h) = handle {
            h.clear();
        }
    });
}

/// Whether a key press on an expandable row (not on a control inside it) toggles it:
/// Enter or Space, as on a button. The caller's default action is stopped.
pub fn is_toggle_key(ev: &leptos::ev::KeyboardEvent) -> bool {
    let hit = matches!(ev.key().as_str(), "Enter" | " ") && ev.target() == ev.current_target();
    if hit {
        ev.prevent_default();
        ev.stop_propagation();
    }
    hit
}

pub fn copy_to_clipboard(text: &str) {
    #[cfg(feature = "hydrate")]
    {
        let _ = window().navigator().clipboard().write_text(text);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = text;
}

/// Copies `text`; `what` names it for screen readers ("Copy request id"), since the
/// visible "Copy" says nothing on its own.
#[component]
pub fn CopyButton(
    #[prop(into)] text: String,
    #[prop(into)] what: String,
    #[prop(optional, into)] label: Option<String>,
) -> impl IntoView {
    let copied = RwSignal::new(false);
    // The accessible name starts with the visible words, as speech input expects.
    let name = match &label {
        Some(l) => format!("{l}: {what}"),
        None => format!("Copy {what}"),
    };
    let label = label.unwrap_or_else(|| "Copy".into());
    view! {
        <button type="button" class="copy" title=format!("Copy {what} to the clipboard") aria-label=name
            on:click=move |ev| {
                ev.stop_propagation();
                copy_to_clipboard(&text);
                copied.set(true);
            }>
            {move || if copied.get() { "Copied".to_string() } else { label.clone() }}
        </button>
    }
}

/// An event type that may wrap after its dots only ("payment." / "succeeded"), never
/// inside a word, on a narrow screen.
pub fn dotted(event_type: &str) -> impl IntoView {
    event_type
        .split_inclusive('.')
        .map(|part| view! { {part.to_string()}<wbr/> })
        .collect_view()
}

/// Pretty JSON when the text is JSON, the text itself otherwise. Always text, never HTML.
pub fn pretty(text: &str) -> String {
    crate::core::text::indent_json(text).unwrap_or_else(|| text.to_string())
}

/// The current value of a form input (empty before it is mounted). Forms read their
/// fields this way and dispatch the server function themselves: `ActionForm` would
/// bring a query-string decoder into the browser bundle for five forms.
pub fn input_value(input: NodeRef<leptos::html::Input>) -> String {
    input.get_untracked().map(|i| i.value()).unwrap_or_default()
}

#[component]
pub fn HeaderTable(headers: Vec<(String, String)>) -> impl IntoView {
    view! {
        <table class="kv">
            <tbody>
                {headers.into_iter().map(|(k, v)| view! { <tr><th>{k}</th><td>{v}</td></tr> }).collect_view()}
            </tbody>
        </table>
    }
}

/// The message of a server function error, without the transport's prefix.
pub fn error_text(e: &ServerFnError) -> String {
    match e {
        ServerFnError::ServerError(m) => m.clone(),
        other => other.to_string(),
    }
}

/// An attempt's ordering key, as a link to the key's deliveries.
#[component]
pub fn OrderingKey(key: String) -> impl IntoView {
    use crate::delivery_filter::encode_component;
    let href = format!(
        "/developers/deliveries?ordering_key={}",
        encode_component(&key)
    );
    view! { <a class="okey mono" data-testid="ordering-key" href=href title="All attempts with this ordering key">{format!("key {key}")}</a> }
}

/// While an attempt waits its turn in its key's lane: the event right ahead of it, as a
/// link to that event's attempts.
#[component]
pub fn WaitingBehind(event_id: String) -> impl IntoView {
    use crate::delivery_filter::encode_component;
    let href = format!("/developers/deliveries?q={}", encode_component(&event_id));
    view! {
        <a class="waiting" data-testid="waiting-behind" data-event-id=event_id.clone() href=href
            title="Same ordering key: this attempt starts when that event's attempts end">
            "waiting behind "<span class="mono">{event_id.clone()}</span>
        </a>
    }
}

#[cfg(test)]
mod tests {
    use super::bin_of;

    #[test]
    fn a_redirects_target_names_its_bin() {
        assert_eq!(
            bin_of("http://127.0.0.1:3000/r/ab12").as_deref(),
            Some("ab12")
        );
        assert_eq!(
            bin_of("https://posthorn.example/r/ab12/x?y=1").as_deref(),
            Some("ab12")
        );
        assert_eq!(bin_of("https://shop.example/hooks"), None);
        assert_eq!(bin_of("https://shop.example/r/"), None);
    }
}
