//! One endpoint's card on the webhooks page: its head, its last 24 hours, its
//! certificate and filter (built on the server), its failures, the editor and the actions.

use crate::core::EndpointId;
use leptos::prelude::*;

use crate::{
    components::{
        confirm::ConfirmButton,
        layout::{CanAct, NotInPortal},
        widgets::{error_text, CopyButton, StatusBadge},
    },
    core::permissions::Action as Perm,
    model::{DeliveryRow, EndpointView},
    server_fns::endpoints::{
        delete_endpoint, edit_endpoint_header, reveal_secret, rotate_secret, set_ops_endpoint,
        test_send, update_endpoint, EndpointStats,
    },
};

type Done = Action<(), Result<(), ServerFnError>>;
type Secret = Action<(), Result<String, ServerFnError>>;

/// A card's signals and actions, made once per card: the editor's fields keep what was
/// typed while it is closed and opened again, and every part of the card reports into
/// the same message.
#[derive(Clone, Copy)]
struct Card {
    id: EndpointId,
    enabled: bool,
    message: RwSignal<Option<(bool, String)>>,
    secret: RwSignal<Option<String>>,
    test_row: RwSignal<Option<DeliveryRow>>,
    toggle: Done,
    reveal: Secret,
    rotate: Secret,
    test: Action<(), Result<DeliveryRow, ServerFnError>>,
    remove: Done,
    make_ops: Done,
    editing: RwSignal<bool>,
    header_names: RwSignal<Vec<String>>,
    edit_url: RwSignal<String>,
    edit_types: RwSignal<String>,
    edit_rate: RwSignal<String>,
    save: Done,
    header_name: RwSignal<String>,
    header_value: RwSignal<String>,
    edit_header: Action<(String, Option<String>), Result<Vec<String>, ServerFnError>>,
}

impl Card {
    fn new(ep: &EndpointView, version: RwSignal<u32>) -> Card {
        let (id, enabled) = (ep.id, ep.enabled);
        let (edit_url, edit_types) = (
            RwSignal::new(ep.url.clone()),
            RwSignal::new(ep.event_types.join(", ")),
        );
        let edit_rate = RwSignal::new(ep.rate_limit.map(|r| r.to_string()).unwrap_or_default());
        Card {
            id,
            enabled,
            message: RwSignal::new(None),
            secret: RwSignal::new(None),
            test_row: RwSignal::new(None),
            toggle: Action::new(move |_: &()| {
                reloading(
                    version,
                    update_endpoint(id, None, None, Some(!enabled), None),
                )
            }),
            reveal: Action::new(move |_: &()| reveal_secret(id)),
            rotate: Action::new(move |_: &()| rotate_secret(id)),
            test: Action::new(move |_: &()| test_send(id)),
            remove: Action::new(move |_: &()| reloading(version, delete_endpoint(id))),
            make_ops: Action::new(move |_: &()| reloading(version, set_ops_endpoint(id))),
            editing: RwSignal::new(false),
            header_names: RwSignal::new(ep.header_names.clone()),
            edit_url,
            edit_types,
            edit_rate,
            save: Action::new(move |_: &()| {
                let change = update_endpoint(
                    id,
                    Some(edit_url.get_untracked()),
                    Some(edit_types.get_untracked()),
                    None,
                    // An empty field is sent as "unlimited": a form omits empty optional values.
                    Some(match edit_rate.get_untracked().trim() {
                        "" => "unlimited".to_string(),
                        r => r.to_string(),
                    }),
                );
                reloading(version, change)
            }),
            header_name: RwSignal::new(String::new()),
            header_value: RwSignal::new(String::new()),
            edit_header: Action::new(move |(name, value): &(String, Option<String>)| {
                edit_endpoint_header(id, name.clone(), value.clone())
            }),
        }
    }

    /// What the actions answered, into the card: header names, the secret, the test
    /// send's row, or the error.
    fn report(self) {
        let Card { message, .. } = self;
        // The card stays open while headers are edited: the list of names is kept here.
        Effect::new(move |_| match self.edit_header.value().get() {
            Some(Ok(names)) => {
                self.header_names.set(names);
                self.header_name.set(String::new());
                self.header_value.set(String::new());
                message.set(None);
            }
            Some(Err(e)) => message.set(Some((false, error_text(&e)))),
            None => {}
        });
        Effect::new(move |_| {
            for r in [self.toggle, self.remove, self.save, self.make_ops]
                .map(|a| a.value().get())
                .into_iter()
                .flatten()
            {
                if let Err(e) = r {
                    message.set(Some((false, error_text(&e))));
                }
            }
        });
        Effect::new(move |_| {
            for r in [self.reveal.value().get(), self.rotate.value().get()]
                .into_iter()
                .flatten()
            {
                match r {
                    Ok(s) => self.secret.set(Some(s)),
                    Err(e) => message.set(Some((false, error_text(&e)))),
                }
            }
        });
        Effect::new(move |_| match self.test.value().get() {
            Some(Ok(row)) => self.test_row.set(Some(row)),
            Some(Err(e)) => message.set(Some((false, error_text(&e)))),
            None => {}
        });
    }
}

/// Runs a change of an endpoint and, once it succeeded, reloads the page's lists. The
/// change asks for the reload itself, not an effect of its card: a list reloaded
/// meanwhile (after the change before) replaces the card, effects and all, before the
/// change ends, and the alerts panel then never heard of it.
async fn reloading<E>(
    version: RwSignal<u32>,
    change: impl std::future::Future<Output = Result<(), E>>,
) -> Result<(), E> {
    let done = change.await;
    if done.is_ok() {
        version.try_update(|v| *v += 1);
    }
    done
}

/// The test send's outcome appears inline as soon as it is recorded.
#[cfg(feature = "hydrate")]
fn follow_test_send(test_row: RwSignal<Option<DeliveryRow>>) {
    use leptos::task::spawn_local;
    crate::components::widgets::every(std::time::Duration::from_millis(500), move || {
        let Some(row) = test_row.get_untracked() else {
            return;
        };
        if !row.status.is_live() {
            return;
        }
        spawn_local(async move {
            if let Ok(mut fresh) =
                crate::server_fns::deliveries::refresh_rows(row.project_id, vec![row.id.get()])
                    .await
            {
                if let Some(f) = fresh.pop() {
                    test_row.set(Some(f));
                }
            }
        });
    });
}

#[component]
pub fn EndpointCard(stats: EndpointStats, version: RwSignal<u32>) -> impl IntoView {
    let card = Card::new(&stats.endpoint, version);
    card.report();
    #[cfg(feature = "hydrate")]
    follow_test_send(card.test_row);
    let (id, enabled) = (card.id, card.enabled);
    view! {
        <section class="endpoint" data-testid="endpoint-row" data-endpoint-id=id.to_string() data-enabled=enabled.to_string()>
            <CardHead ep=stats.endpoint.clone() is_ops=stats.is_ops/>
            <CardMeta stats=stats.clone() header_names=card.header_names/>
            <div class="epcertbox" inner_html=stats.cert_html.clone()
                on:click=move |ev| super::filter_try::on_click(ev, id)></div>
            <Failures id failures=stats.failures.clone()/>
            {move || card.editing.get().then(|| view! { <EditForm card/> <HeadersEditor card/> })}
            <CanAct action=Perm::EditEndpoint>
            <CardActions card is_ops=stats.is_ops/>
            </CanAct>
        </section>
    }
}

/// The URL, and whether the endpoint takes the operations alerts and is enabled.
#[component]
fn CardHead(ep: EndpointView, is_ops: bool) -> impl IntoView {
    view! {
        <div class="ephead">
            <span class="mono break epurl">{ep.url.clone()}</span>
            {is_ops.then(|| view! { <span class="badge badge-pending" title="Receives the project's operational notices">"Operations alerts"</span> })}
            {if ep.enabled { view! { <span class="badge badge-succeeded">"Enabled"</span> }.into_any() } else {
                view! { <span class="badge badge-dead_letter" title=ep.disabled_reason.clone().unwrap_or_default()>"Disabled"</span> }.into_any()
            }}
        </div>
    }
}

/// The success ratio's class: ok from 95 %, warn from 50 %.
fn rate_class(ok: i64, all: i64) -> &'static str {
    match all {
        0 => "rate none",
        _ if ok * 100 >= all * 95 => "rate ok",
        _ if ok * 100 >= all * 50 => "rate warn",
        _ => "rate bad",
    }
}

/// What it takes, its limits and headers, its last 24 hours, and links to its deliveries.
#[component]
fn CardMeta(stats: EndpointStats, header_names: RwSignal<Vec<String>>) -> impl IntoView {
    let ep = stats.endpoint;
    let id = ep.id;
    let (ok, all) = (stats.succeeded_24h, stats.attempts_24h);
    let rate = (all > 0).then(|| crate::core::duration::tenths(ok * 100, all));
    view! {
        <div class="epmeta">
            <span>"Events: "<span class="mono">{ep.event_types.join(", ")}</span></span>
            {(!ep.description.is_empty()).then(|| view! { <span class="muted">{ep.description.clone()}</span> })}
            <span data-testid="endpoint-rate-limit" title="Attempts to this endpoint start at most this often">
                {match ep.rate_limit { Some(r) => format!("Rate limit: {r}/s"), None => "No rate limit".into() }}
            </span>
            {move || (!header_names.get().is_empty()).then(|| view! {
                <span data-testid="custom-headers">"Custom headers: "<span class="mono">{header_names.get().iter().map(|n| format!("{n}: [redacted]")).collect::<Vec<_>>().join(", ")}</span></span>
            })}
            <span class=rate_class(ok, all) data-testid="success-rate">{rate.map(|r| format!("{r}% ok")).unwrap_or_else(|| "no attempts".into())}" · 24 h"</span>
            <span>{format!("{} attempts", stats.attempts_24h)}</span>
            <span>{stats.p95_ms.map(|p| format!("p95 {p:.0} ms")).unwrap_or_default()}</span>
            {sparkline(&stats.hourly)}
            <a href=format!("/developers/deliveries?endpoint={id}")>"Deliveries"</a>
            <a href=format!("/developers/deliveries?endpoint={id}&status=dead_letter")>"Dead letters"</a>
        </div>
    }
}

/// 24 hourly bars of the success ratio, drawn on the server as SVG.
fn sparkline(hourly: &[Option<f64>]) -> impl IntoView {
    let bars = hourly
        .iter()
        .enumerate()
        .map(|(i, v)| {
            // Heights in tenths of a pixel and whole percents: integers, so the bundle
            // carries no float formatting.
            let (h, class) = match v {
                Some(r) => (((r * 200.0) as i64).max(20), if *r >= 0.95 { "bar ok" } else if *r >= 0.5 { "bar warn" } else { "bar bad" }),
                None => (10, "bar none"),
            };
            let title = match v {
                Some(r) => format!("{}h ago: {}% succeeded", 23 - i, (r * 100.0 + 0.5) as i64),
                None => format!("{}h ago: no attempts", 23 - i),
            };
            let px = |t: i64| crate::core::duration::tenths(t, 10);
            view! { <rect x=(i * 5).to_string() y=px(220 - h) width="4" height=px(h) class=class><title>{title}</title></rect> }
        })
        .collect_view();
    view! { <svg class="spark" viewBox="0 0 120 22" width="120" height="22" role="img" aria-label="Success per hour, last 24 hours">{bars}</svg> }
}

/// The last 24 hours' failures by code or error kind, each a link to those deliveries.
#[component]
fn Failures(id: EndpointId, failures: Vec<(String, i64)>) -> impl IntoView {
    (!failures.is_empty()).then(|| view! {
        <div class="epfail" data-testid="endpoint-failures">
            "Failures, 24 h: "
            {failures.iter().map(|(what, n)| {
                // The chip's own 24 hours, so the list it opens has the rows it counted.
                let since = (chrono::Utc::now() - chrono::Duration::hours(24)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                let by = if what.chars().all(|c| c.is_ascii_digit()) { "code" } else { "error_kind" };
                let href = format!("/developers/deliveries?endpoint={id}&{by}={what}&since={since}");
                view! { <a class="failchip" href=href>{format!("{what} × {n}")}</a> }
            }).collect_view()}
        </div>
    })
}

/// The open editor's form: URL, types and rate limit.
#[component]
fn EditForm(card: Card) -> impl IntoView {
    let Card {
        save,
        edit_url,
        edit_types,
        edit_rate,
        editing,
        ..
    } = card;
    view! {
        <form class="filters" on:submit=move |ev| { ev.prevent_default(); save.dispatch(()); }>
            <input type="url" aria-label="Endpoint URL" data-testid="edit-url-input" prop:value=move || edit_url.get() on:input=move |ev| edit_url.set(event_target_value(&ev))/>
            <input type="text" aria-label="Event types" data-testid="edit-types-input" prop:value=move || edit_types.get() on:input=move |ev| edit_types.set(event_target_value(&ev))/>
            <label class="rate">"At most "
                <input type="number" min="1" max=crate::core::throttle::MAX_RATE_LIMIT.to_string() step="1" placeholder="unlimited" class="rate"
                    aria-label="Rate limit (attempts per second, empty for unlimited)" data-testid="edit-rate-limit-input"
                    prop:value=move || edit_rate.get() on:input=move |ev| edit_rate.set(event_target_value(&ev))/>
                " attempts/s"</label>
            <button type="submit" class="primary" data-testid="save-endpoint-button">"Save"</button>
            <button type="button" class="link" on:click=move |_| editing.set(false)>"Cancel"</button>
        </form>
    }
}

/// Custom headers, sent with every attempt: names listed, values write-only.
#[component]
fn HeadersEditor(card: Card) -> impl IntoView {
    let Card {
        header_names,
        header_name,
        header_value,
        edit_header,
        ..
    } = card;
    view! {
        <div class="epheaders" data-testid="custom-headers-editor">
            <span class="muted">"Custom headers, sent with every attempt (values are write-only): "</span>
            {move || header_names.get().into_iter().map(|n| {
                let name = n.clone();
                view! {
                    <span class="chip mono">{format!("{n}: [redacted]")}" "
                        <button type="button" class="link danger" aria-label=format!("Remove header {n}") data-testid="remove-header-button"
                            on:click=move |_| { edit_header.dispatch((name.clone(), None)); }>"×"</button>
                    </span>
                }
            }).collect_view()}
            <form class="filters" on:submit=move |ev| { ev.prevent_default(); edit_header.dispatch((header_name.get_untracked(), Some(header_value.get_untracked()))); }>
                <input type="text" placeholder="Header-Name" aria-label="Header name" required data-testid="header-name-input"
                    prop:value=move || header_name.get() on:input=move |ev| header_name.set(event_target_value(&ev))/>
                <input type="password" placeholder="value" aria-label="Header value" required autocomplete="off" data-testid="header-value-input"
                    prop:value=move || header_value.get() on:input=move |ev| header_value.set(event_target_value(&ev))/>
                <button type="submit" data-testid="set-header-button">"Set header"</button>
            </form>
        </div>
    }
}

/// Edit, test send, disable or enable, the secret, operations alerts, delete; then the
/// revealed secret, the test send's outcome and the card's message.
#[component]
fn CardActions(card: Card, is_ops: bool) -> impl IntoView {
    let Card {
        id,
        enabled,
        editing,
        test,
        toggle,
        reveal,
        rotate,
        make_ops,
        remove,
        secret,
        test_row,
        message,
        ..
    } = card;
    view! {
        <div class="actions">
            <button type="button" data-testid="edit-endpoint-button" on:click=move |_| editing.update(|e| *e = !*e)>"Edit"</button>
            <button type="button" data-testid="test-send-button" on:click=move |_| { test.dispatch(()); }>"Test send"</button>
            {if enabled {
                view! {
                    <ConfirmButton label="Disable" testid="toggle-endpoint-button" confirm="Disable"
                        title=format!("Disable endpoint #{id}?")
                        what="Nothing is sent to it while it is disabled: its events wait, and go out when it is enabled again."
                        pending=Signal::derive(move || toggle.pending().get())
                        on_confirm=move || { toggle.dispatch(()); }/>
                }.into_any()
            } else {
                view! {
                    <button type="button" data-testid="toggle-endpoint-button" disabled=move || toggle.pending().get()
                        on:click=move |_| { toggle.dispatch(()); }>"Enable"</button>
                }.into_any()
            }}
            <button type="button" data-testid="reveal-secret-button" on:click=move |_| { reveal.dispatch(()); }>"Reveal secret"</button>
            <ConfirmButton label="Rotate secret" testid="rotate-secret-button" confirm="Rotate"
                title=format!("Rotate the secret of endpoint #{id}?")
                what="A new secret signs every delivery from now on. The old secret keeps signing too for 24 h, so the receiver can switch over without refusing any."
                pending=Signal::derive(move || rotate.pending().get())
                on_confirm=move || { rotate.dispatch(()); }/>
            {(!is_ops).then(|| view! {
                <NotInPortal>
                <button type="button" data-testid="ops-endpoint-button" on:click=move |_| { make_ops.dispatch(()); }>"Send operations alerts here"</button>
                </NotInPortal>
            })}
            <ConfirmButton label="Delete" class="link danger" testid="delete-endpoint-button" confirm="Delete"
                title=format!("Delete endpoint #{id}?")
                what="Nothing is sent to it any more; its waiting attempts end as dead letters (endpoint deleted). Its delivery history stays for the retention window."
                pending=Signal::derive(move || remove.pending().get())
                on_confirm=move || { remove.dispatch(()); }/>
            {move || secret.get().map(|s| view! { <code data-testid="endpoint-secret">{s.clone()}</code> <CopyButton text=s.clone() what="signing secret"/> })}
            {move || test_row.get().map(|r| view! {
                <span data-testid="test-send-result" data-status=r.status.as_str()>
                    "test.ping: "<StatusBadge status=r.status/>" "{r.response_status.map(|c| c.to_string())}" "
                    <span data-testid="test-send-explained">{r.explained.clone()}</span>
                    {r.error.clone().map(|e| view! { <details class="raw"><summary>"Details"</summary><code>{e}</code></details> })}
                </span>
            })}
            {move || message.get().map(|(ok, m)| view! { <span class=if ok { "note ok" } else { "note error" } role="status">{m}</span> })}
        </div>
    }
}
