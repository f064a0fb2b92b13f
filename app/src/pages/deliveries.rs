//! `/developers/deliveries`: Webhook Delivery. The list renders complete on the server;
//! once hydrated, rows expand, actions run, and queued rows update live.

use leptos::{html, prelude::*};
use leptos_router::hooks::use_query_map;

use crate::{
    components::{
        hydration::{gate, Gate},
        layout::{Cabinet, CanAct},
        widgets::{error_text, OrderingKey, StatusBadge, Time, WaitingBehind},
    },
    core::{
        duration::format_millis,
        status::{ErrorKind, Trigger},
    },
    model::DeliveryRow,
    server_fns::deliveries::{
        cancel_replay, delivery_filter_options, list_deliveries, preview_replay, start_replay,
        DeliveryFilter, FilterOptions, ReplayProgress,
    },
};

use super::{delivery_detail::Detail, delivery_filters::FilterBar};

const FILTER_KEYS: [&str; 11] = [
    "project",
    "status",
    "ordering_key",
    "event_type",
    "endpoint",
    "code",
    "error_kind",
    "since",
    "until",
    "q",
    "cursor",
];

#[component]
pub fn DeliveriesPage() -> impl IntoView {
    // Resources are made here, once per visit, not inside the cabinet's Suspense: a
    // resource made inside a boundary that re-renders would lose its request context.
    let query = use_query_map();
    let filter = Memo::new(move |_| {
        let q = query.get();
        let pairs: Vec<(&str, String)> = FILTER_KEYS
            .iter()
            .filter_map(|k| q.get(k).map(|v| (*k, v)))
            .collect();
        DeliveryFilter::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
    });
    let page = Resource::new(move || filter.get(), list_deliveries);
    let options = Resource::new(move || filter.get().project, delivery_filter_options);
    let gates = (gate(), gate());
    view! { <Cabinet title="Webhook Delivery"><DeliveryView filter page options gates/></Cabinet> }
}

type PageResource = Resource<Result<crate::model::DeliveryPage, ServerFnError>>;
type OptionsResource = Resource<Result<FilterOptions, ServerFnError>>;

#[component]
fn DeliveryView(
    filter: Memo<DeliveryFilter>,
    page: PageResource,
    options: OptionsResource,
    gates: (Gate, Gate),
) -> impl IntoView {
    let search_ref = NodeRef::<html::Input>::new();
    let (options_gate, page_gate) = gates;
    view! {
        <Suspense fallback=|| ()>
            // Drawn again when the URL changes (Clear, Back), so the controls show it.
            {move || Suspend::new(async move {
                filter.track();
                let opts = options.await.unwrap_or_default();
                view! { {options_gate.open()} <FilterBar filter opts search_ref/> }
            })}
        </Suspense>
        <CanAct><BulkReplay filter/></CanAct>
        <Transition fallback=|| view! { <p class="loading">"Loading deliveries…"</p> }>
            {move || Suspend::new(async move {
                let content = match page.await {
                    Ok(data) => {
                        let days = data.retention_days;
                        let f = filter.get_untracked();
                        let next = data.next.map(|c| {
                            let mut nf = f.clone();
                            nf.cursor = Some(c);
                            format!("/developers/deliveries?{}", nf.to_query(true))
                        });
                        let first = f.cursor.is_some().then(|| format!("/developers/deliveries?{}", f.to_query(false)));
                        let no_match = f.q.as_deref().filter(|_| data.rows.is_empty()).map(no_match_text);
                        view! {
                            {no_match.map(|m| view! { <p class="note error" role="status" data-testid="search-no-match">{m}</p> })}
                            <DeliveryTable rows=data.rows as_of=data.as_of search_ref filter page/>
                            <nav class="pager">
                                {first.map(|href| view! { <a href=href class="button">"⇤ Newest"</a> })}
                                {match next {
                                    Some(href) => view! { <a href=href class="button" data-testid="next-page">"Older →"</a> }.into_any(),
                                    None => view! { <span class="muted">{format!("End of the last {days} days for this view.")}</span> }.into_any(),
                                }}
                            </nav>
                        }.into_any()
                    }
                    Err(e) => {
                        leptos::logging::error!("delivery list failed: {e}");
                        view! { <p class="error" role="alert">{error_text(&e)}</p> }.into_any()
                    }
                };
                view! { {page_gate.open()} {content} }
            })}
        </Transition>
    }
}

/// Why a search found nothing, in words.
fn no_match_text(q: &str) -> String {
    use crate::core::id_search::{parse, IdSearch};
    match parse(q) {
        IdSearch::Nothing(why) => why,
        IdSearch::Exact(_, id) => format!("No attempt in this view has the id {id}."),
        IdSearch::Prefix(_, lo, _) => {
            format!("No attempt in this view has an id starting with {lo}.")
        }
    }
}

#[component]
fn DeliveryTable(
    rows: Vec<DeliveryRow>,
    as_of: Option<chrono::DateTime<chrono::Utc>>,
    search_ref: NodeRef<html::Input>,
    filter: Memo<DeliveryFilter>,
    page: PageResource,
) -> impl IntoView {
    let rows = RwSignal::new(rows);
    let expanded = RwSignal::new(None::<i64>);
    let selected = RwSignal::new(None::<i64>);
    let tick = RwSignal::new(0u32);
    // Attempts newer than the newest row that match the view (first page only).
    let newer = RwSignal::new(0i64);
    #[cfg(not(feature = "hydrate"))]
    let _ = (search_ref, filter, as_of);
    #[cfg(feature = "hydrate")]
    {
        follow_rows(rows, filter, tick, newer, (expanded, page, as_of));
        keyboard(rows, selected, expanded, search_ref);
    }
    view! {
        <NewRowsBar newer page/>
        // A treegrid: each row opens into its detail (aria-expanded), which is a row too.
        <div class="deliveries" role="treegrid" aria-label="Delivery attempts">
            <div class="drow dhead" role="row">
                <span role="columnheader">"Status"</span>
                <span role="columnheader">"Event"</span>
                <span role="columnheader">"Event id"</span>
                <span role="columnheader">"Endpoint"</span>
                <span role="columnheader" class="num">"Try"</span>
                <span role="columnheader" class="num">"Code"</span>
                <span role="columnheader" class="num">"Duration"</span>
                <span role="columnheader" class="num">"When"</span>
            </div>
            {move || rows.with(|v| v.is_empty()).then(|| view! {
                <div role="row"><p role="gridcell" class="empty">"No deliveries match this view. " <a href="/developers/deliveries">"Clear the filters"</a></p></div>
            })}
            // Keyed by id and state: a row whose status changes is redrawn, the others
            // (and an open detail with its messages) stay as they are.
            <For
                each=move || rows.get()
                key=|r| (r.id, r.status, r.response_status)
                children=move |row| view! { <Row row rows expanded selected tick/> }
            />
        </div>
    }
}

/// "N new — show": reloads the first page with the attempts that arrived since.
#[component]
fn NewRowsBar(newer: RwSignal<i64>, page: PageResource) -> impl IntoView {
    move || {
        (newer.get() > 0).then(|| view! {
            <button type="button" class="newbar" data-testid="new-rows-bar" data-count=newer.get().to_string()
                on:click=move |_| { newer.set(0); page.refetch(); }>
                {match newer.get() { n @ 100.. => format!("{n}+ new — show"), n => format!("{n} new — show") }}
            </button>
        })
    }
}

/// Queued rows move to their outcome without a reload; every third second the first page
/// asks how many newer attempts match (not while the tab is hidden). At the top of the
/// list with no row open or focused, they simply appear; otherwise the "N new" bar offers
/// them, so nothing moves under someone reading or using the keyboard.
#[cfg(feature = "hydrate")]
fn follow_rows(
    rows: RwSignal<Vec<DeliveryRow>>,
    filter: Memo<DeliveryFilter>,
    tick: RwSignal<u32>,
    newer: RwSignal<i64>,
    (expanded, page, as_of): (
        RwSignal<Option<i64>>,
        PageResource,
        Option<chrono::DateTime<chrono::Utc>>,
    ),
) {
    use leptos::task::spawn_local;
    crate::components::widgets::every(std::time::Duration::from_millis(1000), move || {
        tick.update(|t| *t = t.wrapping_add(1));
        let f = filter.get_untracked();
        if tick.get_untracked().is_multiple_of(3) && f.cursor.is_none() && !document().hidden() {
            // The newest row already due when the page was read: a retry shown ahead of
            // its time is no anchor (nothing newer than it could be counted).
            let (id, at) = rows
                .with_untracked(|v| {
                    v.iter()
                        .filter(|r| as_of.is_none_or(|t| r.created_at <= t))
                        .map(|r| (r.id.get(), r.created_at))
                        .max_by_key(|x| (x.1, x.0))
                })
                .unwrap_or((0, chrono::DateTime::<chrono::Utc>::UNIX_EPOCH));
            spawn_local(async move {
                if let Ok(n) = crate::server_fns::deliveries::count_newer(f, id, at).await {
                    if n > 0 && expanded.get_untracked().is_none() && undisturbed() {
                        newer.set(0);
                        page.refetch();
                    } else {
                        newer.set(n);
                    }
                }
            });
        }
        refresh_live(rows);
    });
}

/// The reader is at the top of the page and the keyboard's focus is not in the list.
#[cfg(feature = "hydrate")]
fn undisturbed() -> bool {
    let top = window().scroll_y().unwrap_or(0.0) < 40.0;
    let focus_in_list = document()
        .active_element()
        .and_then(|el| el.closest(".deliveries").ok().flatten())
        .is_some();
    top && !focus_in_list
}

/// Asks again for the rows still waiting or running (of the first one's project).
#[cfg(feature = "hydrate")]
fn refresh_live(rows: RwSignal<Vec<DeliveryRow>>) {
    let live: Vec<(crate::core::ProjectId, i64)> = rows.with_untracked(|v| {
        v.iter()
            .filter(|r| r.status.is_live())
            .map(|r| (r.project_id, r.id.get()))
            .collect()
    });
    let Some(project_id) = live.first().map(|x| x.0) else {
        return;
    };
    let ids: Vec<i64> = live
        .iter()
        .filter(|x| x.0 == project_id)
        .map(|x| x.1)
        .collect();
    leptos::task::spawn_local(async move {
        if let Ok(fresh) = crate::server_fns::deliveries::refresh_rows(project_id, ids).await {
            rows.update(|v| {
                for f in fresh {
                    if let Some(r) = v.iter_mut().find(|r| r.id == f.id) {
                        *r = f;
                    }
                }
            });
        }
    });
}

/// The list's keys, outside text fields: `/` searches, `j` and `k` move between rows,
/// Enter opens or closes the selected one.
#[cfg(feature = "hydrate")]
fn keyboard(
    rows: RwSignal<Vec<DeliveryRow>>,
    selected: RwSignal<Option<i64>>,
    expanded: RwSignal<Option<i64>>,
    search_ref: NodeRef<html::Input>,
) {
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        let typing = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .map(|el| {
                matches!(
                    el.tag_name().as_str(),
                    "INPUT" | "SELECT" | "TEXTAREA" | "BUTTON" | "A"
                )
            })
            .unwrap_or(false);
        if typing || ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
            return;
        }
        let ids: Vec<i64> = rows.with_untracked(|v| v.iter().map(|r| r.id.get()).collect());
        let count = ids.len();
        let pos = selected
            .get_untracked()
            .and_then(|s| ids.iter().position(|i| *i == s));
        match ev.key().as_str() {
            "/" => {
                ev.prevent_default();
                if let Some(input) = search_ref.get_untracked() {
                    let _ = input.focus();
                }
            }
            "j" if count > 0 => {
                focus_row(ids[pos.map(|p| (p + 1).min(count - 1)).unwrap_or(0)]);
            }
            "k" if count > 0 => {
                focus_row(ids[pos.map(|p| p.saturating_sub(1)).unwrap_or(0)]);
            }
            "Enter" => {
                if let Some(id) = selected.get_untracked() {
                    expanded.update(|e| *e = if *e == Some(id) { None } else { Some(id) });
                }
            }
            _ => {}
        }
    });
    on_cleanup(move || keys.remove());
}

#[component]
fn Row(
    row: DeliveryRow,
    rows: RwSignal<Vec<DeliveryRow>>,
    expanded: RwSignal<Option<i64>>,
    selected: RwSignal<Option<i64>>,
    tick: RwSignal<u32>,
) -> impl IntoView {
    let id = row.id;
    let is_open = move || expanded.get() == Some(id.get());
    let is_selected = move || selected.get() == Some(id.get());
    let toggle = move || {
        selected.set(Some(id.get()));
        expanded.update(|e| {
            *e = if *e == Some(id.get()) {
                None
            } else {
                Some(id.get())
            }
        });
    };
    let r = row.clone();
    view! {
        <div class="dgroup" role="none" data-testid="delivery-row" data-status=row.status.as_str()
            data-request-id=row.request_id.clone() data-event-id=row.event_id.to_string() data-id=id.to_string()
            data-code=row.response_status.map(|c| c.to_string()).unwrap_or_default()
            data-error-kind=row.error_kind.map_or("", ErrorKind::as_str) data-project=row.project_id.to_string()
            class:open=is_open class:selected=is_selected
            // Escape, anywhere in an open row (its detail's buttons too), closes it and
            // puts the focus back on the row.
            on:keydown=move |ev| {
                if ev.key() == "Escape" && is_open() {
                    expanded.set(None);
                    #[cfg(feature = "hydrate")]
                    focus_row(id.get());
                }
            }>
            <div class="drow" role="row" tabindex="0" aria-expanded=move || is_open().to_string()
                on:click=move |_| toggle()
                on:focus=move |_| selected.set(Some(id.get()))
                // The row itself, not a control inside it: Enter or Space opens or closes it.
                on:keydown=move |ev| {
                    if crate::components::widgets::is_toggle_key(&ev) {
                        toggle();
                    }
                }>
                <RowCells row=row.clone()/>
            </div>
            {move || is_open().then(|| view! {
                <div role="row" class="detail-row"><div role="gridcell"><Detail row=r.clone() rows tick/></div></div>
            })}
        </div>
    }
}

/// A row's cells: status, event, event id, where it went, try, code, duration, when.
#[component]
fn RowCells(row: DeliveryRow) -> impl IntoView {
    let (code, code_class) = code_cell(row.response_status);
    let duration = row
        .duration_ms
        .map(|d| format_millis(d as i64))
        .unwrap_or_else(|| "—".into());
    let trigger = (row.trigger != Trigger::Auto).then(|| row.trigger.label());
    let project = project_label(&row);
    // A Redirect went to an inspector bin, not to the endpoint: it says so, and links there.
    let bin = (row.trigger == Trigger::Redirect)
        .then(|| crate::components::widgets::bin_of(&row.target_url))
        .flatten();
    let error_line = row.explained.clone().or_else(|| row.error.clone());
    view! {
        <span role="gridcell">{match bin.is_some() {
            true => view! { <span class="badge badge-redirect" data-testid="redirect-badge" title=row.status.label()>"Redirected"</span> }.into_any(),
            false => view! { <StatusBadge status=row.status/> }.into_any(),
        }}</span>
        <span role="gridcell" class="etype">{crate::components::widgets::dotted(&row.event_type)}{trigger.map(|t| view! { <em class="trigger">{t}</em> })}
            {project.map(|p| view! { <small class="ellipsis" data-testid="row-project">{p}</small> })}
        </span>
        <span role="gridcell" class="mono ellipsis" title=row.event_id.to_string()>{row.event_id.to_string()}
            {row.ordering_key.clone().map(|k| view! { <small class="ellipsis"><OrderingKey key=k/></small> })}
        </span>
        <span role="gridcell" class="ellipsis" title=row.target_url.clone()>{match bin.clone() {
            Some(b) => view! { <a href=format!("/inspector/{b}") data-testid="row-bin-link" on:click=|ev| ev.stop_propagation()>{format!("inspector bin {b}")}</a> }.into_any(),
            None => view! { {row.endpoint_url.clone()} }.into_any(),
        }}
            {error_line.map(|e| view! { <small class="err ellipsis" data-testid="row-error" title=row.error.clone()>{e}</small> })}
            {row.waits_for.clone().map(|e| view! { <small class="ellipsis"><WaitingBehind event_id=e/></small> })}
        </span>
        <span role="gridcell" class="num">{row.attempt}</span>
        <span role="gridcell" class=format!("num {code_class}")>{code}</span>
        <span role="gridcell" class="num">{duration}</span>
        <span role="gridcell" class="num"><Time at=row.created_at/></span>
    }
}

/// The response code as shown, and its class by range.
fn code_cell(status: Option<i16>) -> (String, &'static str) {
    let class = match status {
        Some(c) if (200..300).contains(&c) => "code ok",
        Some(c) if (400..500).contains(&c) => "code warn",
        Some(_) => "code bad",
        None => "code none",
    };
    (
        status.map(|c| c.to_string()).unwrap_or_else(|| "—".into()),
        class,
    )
}

/// Support staff look across projects: each row says whose it is.
fn project_label(row: &DeliveryRow) -> Option<String> {
    use_context::<crate::model::Viewer>()
        .filter(|v| v.is_support)
        .map(|v| {
            v.projects
                .iter()
                .find(|p| p.id == row.project_id)
                .map_or_else(|| format!("project {}", row.project_id), |p| p.name.clone())
        })
}

/// "Retry all matching": preview the count, start, watch progress, cancel.
#[component]
fn BulkReplay(filter: Memo<DeliveryFilter>) -> impl IntoView {
    let preview = Action::new(move |_: &()| preview_replay(filter.get_untracked()));
    let start = Action::new(move |_: &()| start_replay(filter.get_untracked()));
    let cancel = Action::new(move |id: &i64| cancel_replay(*id));
    let progress = RwSignal::new(None::<ReplayProgress>);
    let error = RwSignal::new(None::<String>);
    let asked = RwSignal::new(false);
    Effect::new(move |_| match start.value().get() {
        Some(Ok(p)) => {
            asked.set(false);
            progress.set(Some(p));
        }
        Some(Err(e)) => error.set(Some(error_text(&e))),
        None => {}
    });
    Effect::new(move |_| {
        if let Some(Ok(p)) = cancel.value().get() {
            progress.set(Some(p));
        }
    });
    Effect::new(move |_| {
        if preview.value().get().is_some() {
            asked.set(true);
        }
    });
    #[cfg(feature = "hydrate")]
    follow_replay(progress);
    view! {
        <div class="bulk">
            <button type="button" data-testid="bulk-retry-button" on:click=move |_| { error.set(None); preview.dispatch(()); }>"Retry all matching…"</button>
            {move || (asked.get() && progress.get().is_none()).then(|| view! { <ReplayAsk answer=preview.value().get() start asked/> })}
            {move || progress.get().map(|p| {
                let id = p.id;
                let running = p.status == "running";
                view! {
                    <span class="replay" data-testid="bulk-progress" data-status=p.status.clone()
                        data-queued=p.queued.to_string() data-total=p.total.to_string() data-finished=p.finished.to_string()>
                        <progress max=p.total.to_string() value=p.queued.to_string()></progress>
                        {format!(" Replay #{}: {} of {} queued, {} finished, {} ({} per second per endpoint)", p.id, p.queued, p.total, p.finished, p.status, p.per_second)}
                    </span>
                    {running.then(|| view! {
                        <button type="button" data-testid="bulk-cancel-button" on:click=move |_| { cancel.dispatch(id); }>"Cancel"</button>
                    })}
                }
            })}
            {move || error.get().map(|e| view! { <span class="note error">{e}</span> })}
        </div>
    }
}

/// The count a replay of this view would send (the preview's `answer`), and the question
/// whether to send it.
#[component]
fn ReplayAsk(
    answer: Option<Result<i64, ServerFnError>>,
    start: Action<(), Result<ReplayProgress, ServerFnError>>,
    asked: RwSignal<bool>,
) -> impl IntoView {
    match answer {
        Some(Ok(0)) => view! { <span class="note">"Nothing in this view to retry."</span> }.into_any(),
        Some(Ok(n)) => view! {
            <span class="note" data-testid="bulk-count" data-count=n.to_string()>
                {format!("Send {n} event{} again, one attempt per event and endpoint, throttled per endpoint?", if n == 1 { "" } else { "s" })}
            </span>
            <button type="button" class="primary" data-testid="bulk-confirm-button" on:click=move |_| { start.dispatch(()); }>{format!("Send {n}")}</button>
            <button type="button" class="link" on:click=move |_| asked.set(false)>"Never mind"</button>
        }.into_any(),
        Some(Err(e)) => view! { <span class="note error">{error_text(&e)}</span> }.into_any(),
        None => ().into_any(),
    }
}

/// Asks for a running replay's progress every second until it has finished.
#[cfg(feature = "hydrate")]
fn follow_replay(progress: RwSignal<Option<ReplayProgress>>) {
    use leptos::task::spawn_local;
    crate::components::widgets::every(std::time::Duration::from_millis(1000), move || {
        let Some(p) = progress.get_untracked() else {
            return;
        };
        if p.status != "running" && p.finished >= p.queued {
            return;
        }
        spawn_local(async move {
            if let Ok(fresh) = crate::server_fns::deliveries::get_replay_progress(p.id).await {
                progress.set(Some(fresh));
            }
        });
    });
}

/// Moves the keyboard's focus to a row (its focus handler selects it).
#[cfg(feature = "hydrate")]
fn focus_row(id: i64) {
    use wasm_bindgen::JsCast;
    let row = document()
        .query_selector(&format!(
            "[data-testid=delivery-row][data-id=\"{id}\"] > .drow"
        ))
        .ok()
        .flatten()
        .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok());
    if let Some(row) = row {
        let _ = row.focus();
    }
}
