//! The deliveries list's filter bar: project, search, status, type, endpoint, code,
//! error kind and time range (presets or a custom from–to in the browser's zone), all
//! written to the URL so a link reproduces the view.

use crate::core::{EndpointId, ProjectId};
use chrono::{Duration, Utc};
use leptos::{html, prelude::*};
use leptos_router::hooks::use_navigate;

use crate::{
    core::status::{DeliveryStatus, ErrorKind},
    server_fns::deliveries::{DeliveryFilter, FilterOptions},
};

#[component]
pub fn FilterBar(
    filter: Memo<DeliveryFilter>,
    opts: FilterOptions,
    search_ref: NodeRef<html::Input>,
) -> impl IntoView {
    let navigate = use_navigate();
    let go = Callback::new(move |f: DeliveryFilter| {
        navigate(
            &format!("/developers/deliveries?{}", f.to_query(false)),
            Default::default(),
        );
    });
    let key_ref = NodeRef::<html::Input>::new();
    let f = filter.get_untracked();
    let custom = RwSignal::new(range_preset(f.since, f.until) == "custom");
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    let more = RwSignal::new(
        f.ordering_key.is_some()
            || f.event_type.is_some()
            || f.endpoint.is_some()
            || f.code.is_some()
            || f.error_kind.is_some()
            || f.since.is_some()
            || f.until.is_some(),
    );
    view! {
        <form class="filters" class:more=move || more.get() on:submit=move |ev| {
            ev.prevent_default();
            let mut f = filter.get_untracked();
            f.cursor = None;
            f.q = search_ref.get().map(|i| i.value()).filter(|v| !v.trim().is_empty());
            f.ordering_key = key_ref.get().map(|i| i.value().trim().to_string()).filter(|v| !v.is_empty());
            go.run(f);
        }>
            <ProjectSelect current=f.project.map(ProjectId::get) go/>
            <input type="search" name="q" placeholder="Search event id or request id  ( / )"
                data-testid="search-input" node_ref=search_ref value=opt(&f.q) aria-label="Search by event id or request id"/>
            <StatusSelect filter go/>
            // On a phone the other filters fold behind one button (open when one is set),
            // so the first rows fit the first screen; wider, they are all in the bar.
            <button type="button" class="more-toggle" data-testid="more-filters" aria-controls="more-filters"
                aria-expanded=move || more.get().to_string() on:click=move |_| more.update(|m| *m = !*m)>
                {move || if more.get() { "Fewer filters" } else { "More filters" }}
            </button>
            <div class="more-filters" id="more-filters">
                <input type="search" name="ordering_key" data-testid="ordering-key-filter" placeholder="Ordering key" node_ref=key_ref
                    value=opt(&f.ordering_key) aria-label="Ordering key" maxlength="255"/>
                <EventTypeSelect filter types=opts.event_types go/>
                <EndpointSelect filter endpoints=opts.endpoints go/>
                <CodeSelect filter go/>
                <ErrorKindSelect filter go/>
                <RangeSelect filter days=opts.retention_days custom go/>
                <CustomRange filter custom go/>
                <a class="button link" href="/developers/deliveries">"Clear"</a>
            </div>
            <button type="submit">"Search"</button>
        </form>
    }
}

/// A menu's change handler: the view's filter from its first page, changed by `apply`
/// with the picked value.
fn on_pick(
    filter: Memo<DeliveryFilter>,
    go: Callback<DeliveryFilter>,
    apply: fn(&mut DeliveryFilter, String),
) -> impl Fn(leptos::ev::Event) {
    move |ev| {
        let mut f = filter.get_untracked();
        f.cursor = None;
        apply(&mut f, event_target_value(&ev));
        go.run(f);
    }
}

/// Support staff (and members of several projects) pick the project in the view; a new
/// project starts with no other filter.
#[component]
fn ProjectSelect(current: Option<i64>, go: Callback<DeliveryFilter>) -> impl IntoView {
    let projects = use_context::<crate::model::Viewer>()
        .filter(|v| v.projects.len() > 1)
        .map(|v| (v.projects, current.or(v.current.map(|p| p.id.get()))));
    projects.map(|(list, current)| view! {
        <select name="project" data-testid="project-filter" aria-label="Project" on:change=move |ev| {
            let f = DeliveryFilter { project: event_target_value(&ev).parse().ok(), ..Default::default() };
            go.run(f);
        }>
            {list.into_iter().map(|p| view! {
                <option value=p.id.to_string() selected=current == Some(p.id.get())>{p.name}</option>
            }).collect_view()}
        </select>
    })
}

#[component]
fn StatusSelect(filter: Memo<DeliveryFilter>, go: Callback<DeliveryFilter>) -> impl IntoView {
    let f = filter.get_untracked();
    view! {
        <select name="status" data-testid="status-filter" aria-label="Status" on:change=on_pick(filter, go, |f, v| f.status = DeliveryStatus::parse(&v))>
            <option value="">"All statuses"</option>
            {DeliveryStatus::ALL.iter().map(|s| view! {
                <option value=s.as_str() selected=f.status == Some(*s)>{s.label()}</option>
            }).collect_view()}
        </select>
    }
}

#[component]
fn EventTypeSelect(
    filter: Memo<DeliveryFilter>,
    types: Vec<String>,
    go: Callback<DeliveryFilter>,
) -> impl IntoView {
    let f = filter.get_untracked();
    view! {
        <select name="event_type" data-testid="event-type-filter" aria-label="Event type" on:change=on_pick(filter, go, |f, v| f.event_type = Some(v).filter(|v| !v.is_empty()))>
            <option value="">"All event types"</option>
            {types.iter().map(|t| view! {
                <option value=t.clone() selected=f.event_type.as_deref() == Some(t.as_str())>{t.clone()}</option>
            }).collect_view()}
        </select>
    }
}

#[component]
fn EndpointSelect(
    filter: Memo<DeliveryFilter>,
    endpoints: Vec<(i64, String)>,
    go: Callback<DeliveryFilter>,
) -> impl IntoView {
    let f = filter.get_untracked();
    view! {
        <select name="endpoint" data-testid="endpoint-filter" aria-label="Endpoint" on:change=on_pick(filter, go, |f, v| f.endpoint = v.parse().ok())>
            <option value="">"All endpoints"</option>
            {endpoints.iter().map(|(id, url)| view! {
                <option value=id.to_string() selected=f.endpoint == Some(EndpointId::new(*id))>{format!("#{id} {url}")}</option>
            }).collect_view()}
        </select>
    }
}

/// Response codes by class; an exact code from a link (a failure chip) is offered too.
#[component]
fn CodeSelect(filter: Memo<DeliveryFilter>, go: Callback<DeliveryFilter>) -> impl IntoView {
    let f = filter.get_untracked();
    view! {
        <select name="code" data-testid="code-filter" aria-label="Response code" on:change=on_pick(filter, go, |f, v| f.code = Some(v).filter(|v| !v.is_empty()))>
            <option value="">"Any response"</option>
            {["2xx", "3xx", "4xx", "5xx", "none"].into_iter().map(|c| view! {
                <option value=c selected=f.code.as_deref() == Some(c)>{if c == "none" { "No response".to_string() } else { c.to_string() }}</option>
            }).collect_view()}
            {f.code.clone().filter(|c| c.parse::<u16>().is_ok()).map(|c| view! { <option value=c.clone() selected=true>{c.clone()}</option> })}
        </select>
    }
}

#[component]
fn ErrorKindSelect(filter: Memo<DeliveryFilter>, go: Callback<DeliveryFilter>) -> impl IntoView {
    let f = filter.get_untracked();
    view! {
        <select name="error_kind" data-testid="error-kind-filter" aria-label="Error kind" on:change=on_pick(filter, go, |f, v| f.error_kind = ErrorKind::parse(&v))>
            <option value="">"Any error"</option>
            {ErrorKind::ALL.iter().map(|k| view! {
                <option value=k.as_str() selected=f.error_kind == Some(*k)>{k.label()}</option>
            }).collect_view()}
        </select>
    }
}

/// The time range's presets, and the entry that opens the custom range.
#[component]
fn RangeSelect(
    filter: Memo<DeliveryFilter>,
    days: u32,
    custom: RwSignal<bool>,
    go: Callback<DeliveryFilter>,
) -> impl IntoView {
    let f = filter.get_untracked();
    let selected_range = range_preset(f.since, f.until);
    view! {
        <select name="range" data-testid="range-filter" aria-label="Time range" on:change=move |ev| {
            let v = event_target_value(&ev);
            if v == "custom" {
                custom.set(true);
                return;
            }
            let mut f = filter.get_untracked();
            f.cursor = None;
            f.until = None;
            f.since = v.parse::<i64>().ok().map(|h| Utc::now() - Duration::hours(h));
            go.run(f);
        }>
            <option value="" selected=selected_range.is_empty()>{format!("Last {days} days")}</option>
            <option value="1" selected=selected_range == "1">"Last hour"</option>
            <option value="6" selected=selected_range == "6">"Last 6 hours"</option>
            <option value="24" selected=selected_range == "24">"Last 24 hours"</option>
            <option value="custom" selected=selected_range == "custom">"Custom range…"</option>
        </select>
    }
}

/// A custom from–to in the browser's zone, shown once picked in the range menu.
#[component]
fn CustomRange(
    filter: Memo<DeliveryFilter>,
    custom: RwSignal<bool>,
    go: Callback<DeliveryFilter>,
) -> impl IntoView {
    let f = filter.get_untracked();
    let (from_ref, to_ref) = (NodeRef::<html::Input>::new(), NodeRef::<html::Input>::new());
    view! {
        <span class="range" data-testid="custom-range" hidden=move || !custom.get()>
            <input type="datetime-local" data-testid="range-from" aria-label="From (your time zone)" node_ref=from_ref
                prop:value=local_input(f.since)/>
            "–"
            <input type="datetime-local" data-testid="range-to" aria-label="To (your time zone)" node_ref=to_ref
                prop:value=local_input(f.until)/>
            <button type="button" data-testid="range-apply" on:click=move |_| {
                let mut f = filter.get_untracked();
                f.cursor = None;
                f.since = from_ref.get_untracked().and_then(|i| from_local_input(&i.value()));
                f.until = to_ref.get_untracked().and_then(|i| from_local_input(&i.value()));
                go.run(f);
            }>"Apply"</button>
        </span>
    }
}

/// Which entry of the range menu the URL's `since`/`until` are: a preset's hours, ""
/// for the whole window, or "custom".
fn range_preset(
    since: Option<chrono::DateTime<Utc>>,
    until: Option<chrono::DateTime<Utc>>,
) -> &'static str {
    let Some(s) = since else {
        return if until.is_some() { "custom" } else { "" };
    };
    if until.is_some() {
        return "custom";
    }
    let age = (Utc::now() - s).num_minutes();
    [(61, "1"), (361, "6"), (1441, "24")]
        .into_iter()
        .find(|(m, _)| age <= *m && age >= m - 62)
        .map_or("custom", |(_, p)| p)
}

/// A `datetime-local` input's value for a time: the browser's zone once hydrated, UTC
/// in the server's render (which the page never shows: the inputs open on a choice).
fn local_input(at: Option<chrono::DateTime<Utc>>) -> String {
    let Some(at) = at else {
        return String::new();
    };
    #[cfg(feature = "hydrate")]
    {
        let d = js_sys::Date::new(&(at.timestamp_millis() as f64).into());
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}",
            d.get_full_year(),
            d.get_month() + 1,
            d.get_date(),
            d.get_hours(),
            d.get_minutes()
        )
    }
    #[cfg(not(feature = "hydrate"))]
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)[..16].to_string()
}

/// A `datetime-local` value read in the browser's zone.
#[cfg(feature = "hydrate")]
fn from_local_input(v: &str) -> Option<chrono::DateTime<Utc>> {
    // A date-time without an offset is local time to JavaScript's Date.
    let ms = js_sys::Date::new(&v.into()).get_time();
    (!ms.is_nan()).then(|| chrono::DateTime::<Utc>::from_timestamp_millis(ms as i64))?
}
#[cfg(not(feature = "hydrate"))]
fn from_local_input(_: &str) -> Option<chrono::DateTime<Utc>> {
    None
}
