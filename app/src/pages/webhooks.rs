//! `/developers/webhooks`: endpoints with their last 24 hours at a glance, and the
//! actions on them: create, edit, disable, reveal and rotate the secret, test send.

use leptos::prelude::*;

use crate::{
    cabinet::{
        create_endpoint, delete_endpoint, edit_endpoint_header, list_endpoints, reveal_secret,
        rotate_secret, set_ops_endpoint, test_send, update_endpoint, EndpointStats,
    },
    components::{
        confirm::ConfirmButton,
        hydration::gate,
        layout::{Cabinet, CanAct, NotInPortal},
        widgets::{error_text, CopyButton, StatusBadge},
    },
    core::permissions::Action as Perm,
    model::DeliveryRow,
};

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

#[component]
pub fn WebhooksPage() -> impl IntoView {
    let version = RwSignal::new(0u32);
    let endpoints = Resource::new(move || version.get(), |_| list_endpoints());
    let gate = gate();
    let (url, types, description) = (
        RwSignal::new(String::new()),
        RwSignal::new("*".to_string()),
        RwSignal::new(String::new()),
    );
    // The catalogue (documented and seen types) to pick subscriptions from.
    let catalogue = Resource::new(|| (), |_| crate::cabinet::event_catalogue());
    let alerts = super::alerts::alert_settings_resource(version);
    let picker_gate = crate::components::hydration::gate();
    let create = Action::new(move |_: &()| {
        create_endpoint(
            url.get_untracked(),
            types.get_untracked(),
            description.get_untracked(),
        )
    });
    Effect::new(move |_| {
        if let Some(Ok(_)) = create.value().get() {
            url.set(String::new());
            version.update(|v| *v += 1);
        }
    });
    view! {
        <Cabinet title="Webhooks">
            <CanAct action=Perm::CreateEndpoint>
            <form class="filters" on:submit=move |ev| { ev.prevent_default(); create.dispatch(()); }>
                <input type="url" placeholder="https://example.com/webhooks" aria-label="Endpoint URL" required data-testid="endpoint-url-input"
                    prop:value=move || url.get() on:input=move |ev| url.set(event_target_value(&ev))/>
                <input type="text" placeholder="event types, or *" aria-label="Event types" data-testid="endpoint-types-input"
                    prop:value=move || types.get() on:input=move |ev| types.set(event_target_value(&ev))/>
                <Suspense fallback=|| ()>
                    {move || Suspend::new(async move {
                        let types_list = catalogue.await.unwrap_or_default();
                        view! {
                            {picker_gate.open()}
                            <select aria-label="Add an event type" data-testid="event-type-picker" on:change=move |ev| {
                                let picked = event_target_value(&ev);
                                if !picked.is_empty() {
                                    types.update(|t| {
                                        let mut list: Vec<String> = t.split([',', ' ']).map(str::trim)
                                            .filter(|x| !x.is_empty() && *x != "*").map(String::from).collect();
                                        if !list.contains(&picked) { list.push(picked); }
                                        *t = list.join(", ");
                                    });
                                }
                            }>
                                <option value="">"+ event type"</option>
                                {types_list.into_iter().map(|t| view! { <option value=t.event_type.clone()>{t.event_type.clone()}</option> }).collect_view()}
                            </select>
                        }
                    })}
                </Suspense>
                <input type="text" placeholder="description" aria-label="Description"
                    prop:value=move || description.get() on:input=move |ev| description.set(event_target_value(&ev))/>
                <button type="submit" class="primary" data-testid="create-endpoint-button">"Add endpoint"</button>
            </form>
            </CanAct>
            // Not offered the form, the picker's boundary is never drawn: the page is
            // interactive without it.
            {move || {
                let offered = use_context::<crate::model::Viewer>().is_none_or(|v| v.may(Perm::CreateEndpoint));
                (!offered).then(|| picker_gate.open())
            }}
            {move || match create.value().get() {
                Some(Ok(secret)) => view! { <p class="newkey" role="status">"Endpoint added. Signing secret: "<code data-testid="new-endpoint-secret">{secret.clone()}</code>" "<CopyButton text=secret.clone()/></p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert">{error_text(&e)}</p> }.into_any(),
                None => ().into_any(),
            }}
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match endpoints.await {
                        Ok(list) if list.is_empty() => view! { <p class="empty">"No endpoints yet: add one above to start receiving events."</p> }.into_any(),
                        Ok(list) => view! {
                            <div class="endpoints">
                                {list.into_iter().map(|e| view! { <EndpointCard stats=e version/> }).collect_view()}
                            </div>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Transition>
            <NotInPortal><super::alerts::AlertsPanel settings=alerts/></NotInPortal>
        </Cabinet>
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

#[component]
fn EndpointCard(stats: EndpointStats, version: RwSignal<u32>) -> impl IntoView {
    let ep = stats.endpoint.clone();
    let id = ep.id;
    let enabled = ep.enabled;
    let message = RwSignal::new(None::<(bool, String)>);
    let secret = RwSignal::new(None::<String>);
    let test_row = RwSignal::new(None::<DeliveryRow>);
    let toggle = Action::new(move |_: &()| {
        reloading(
            version,
            update_endpoint(id, None, None, Some(!enabled), None),
        )
    });
    let reveal = Action::new(move |_: &()| reveal_secret(id));
    let rotate = Action::new(move |_: &()| rotate_secret(id));
    let test = Action::new(move |_: &()| test_send(id));
    let remove = Action::new(move |_: &()| reloading(version, delete_endpoint(id)));
    let make_ops = Action::new(move |_: &()| reloading(version, set_ops_endpoint(id)));
    let editing = RwSignal::new(false);
    let header_names = RwSignal::new(ep.header_names.clone());
    let edit_url = RwSignal::new(ep.url.clone());
    let edit_types = RwSignal::new(ep.event_types.join(", "));
    let edit_rate = RwSignal::new(ep.rate_limit.map(|r| r.to_string()).unwrap_or_default());
    let save = Action::new(move |_: &()| {
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
    });
    let (header_name, header_value) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    let edit_header = Action::new(move |(name, value): &(String, Option<String>)| {
        edit_endpoint_header(id, name.clone(), value.clone())
    });
    // The card stays open while headers are edited: the list of names is kept here.
    Effect::new(move |_| match edit_header.value().get() {
        Some(Ok(names)) => {
            header_names.set(names);
            header_name.set(String::new());
            header_value.set(String::new());
            message.set(None);
        }
        Some(Err(e)) => message.set(Some((false, error_text(&e)))),
        None => {}
    });
    Effect::new(move |_| {
        for r in [
            toggle.value().get(),
            remove.value().get(),
            save.value().get(),
            make_ops.value().get(),
        ]
        .into_iter()
        .flatten()
        {
            if let Err(e) = r {
                message.set(Some((false, error_text(&e))));
            }
        }
    });
    Effect::new(move |_| {
        for r in [reveal.value().get(), rotate.value().get()]
            .into_iter()
            .flatten()
        {
            match r {
                Ok(s) => secret.set(Some(s)),
                Err(e) => message.set(Some((false, error_text(&e)))),
            }
        }
    });
    Effect::new(move |_| match test.value().get() {
        Some(Ok(row)) => test_row.set(Some(row)),
        Some(Err(e)) => message.set(Some((false, error_text(&e)))),
        None => {}
    });
    #[cfg(feature = "hydrate")]
    {
        use leptos::task::spawn_local;
        // The test send's outcome appears inline as soon as it is recorded.
        let handle = set_interval_with_handle(
            move || {
                let Some(row) = test_row.get_untracked() else {
                    return;
                };
                if !row.status.is_live() {
                    return;
                }
                spawn_local(async move {
                    if let Ok(mut fresh) =
                        crate::deliveries::refresh_rows(row.project_id, vec![row.id]).await
                    {
                        if let Some(f) = fresh.pop() {
                            test_row.set(Some(f));
                        }
                    }
                });
            },
            std::time::Duration::from_millis(500),
        );
        on_cleanup(move || {
            if let Ok(h) = handle {
                h.clear();
            }
        });
    }
    let (ok, all) = (stats.succeeded_24h, stats.attempts_24h);
    let rate_class = match all {
        0 => "rate none",
        _ if ok * 100 >= all * 95 => "rate ok",
        _ if ok * 100 >= all * 50 => "rate warn",
        _ => "rate bad",
    };
    let rate = (all > 0).then(|| crate::core::duration::tenths(ok * 100, all));
    view! {
        <section class="endpoint" data-testid="endpoint-row" data-endpoint-id=id.to_string() data-enabled=enabled.to_string()>
            <div class="ephead">
                <span class="mono break epurl">{ep.url.clone()}</span>
                {stats.is_ops.then(|| view! { <span class="badge badge-pending" title="Receives the project's operational notices">"Operations alerts"</span> })}
                {if enabled { view! { <span class="badge badge-succeeded">"Enabled"</span> }.into_any() } else {
                    view! { <span class="badge badge-dead_letter" title=ep.disabled_reason.clone().unwrap_or_default()>"Disabled"</span> }.into_any()
                }}
            </div>
            <div class="epmeta">
                <span>"Events: "<span class="mono">{ep.event_types.join(", ")}</span></span>
                {(!ep.description.is_empty()).then(|| view! { <span class="muted">{ep.description.clone()}</span> })}
                <span data-testid="endpoint-rate-limit" title="Attempts to this endpoint start at most this often">
                    {match ep.rate_limit { Some(r) => format!("Rate limit: {r}/s"), None => "No rate limit".into() }}
                </span>
                {move || (!header_names.get().is_empty()).then(|| view! {
                    <span data-testid="custom-headers">"Custom headers: "<span class="mono">{header_names.get().iter().map(|n| format!("{n}: [redacted]")).collect::<Vec<_>>().join(", ")}</span></span>
                })}
                <span class=rate_class data-testid="success-rate">{rate.map(|r| format!("{r}% ok")).unwrap_or_else(|| "no attempts".into())}" · 24 h"</span>
                <span>{format!("{} attempts", stats.attempts_24h)}</span>
                <span>{stats.p95_ms.map(|p| format!("p95 {p:.0} ms")).unwrap_or_default()}</span>
                {sparkline(&stats.hourly)}
                <a href=format!("/developers/deliveries?endpoint={id}")>"Deliveries"</a>
                <a href=format!("/developers/deliveries?endpoint={id}&status=dead_letter")>"Failures"</a>
            </div>
            <div class="epcertbox" inner_html=stats.cert_html.clone()></div>
            {(!stats.failures.is_empty()).then(|| view! {
                <div class="epfail" data-testid="endpoint-failures">
                    "Failures, 24 h: "
                    {stats.failures.iter().map(|(what, n)| {
                        let href = if what.chars().all(|c| c.is_ascii_digit()) {
                            format!("/developers/deliveries?endpoint={id}&code={what}&since={}", (chrono::Utc::now() - chrono::Duration::hours(24)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                        } else {
                            format!("/developers/deliveries?endpoint={id}&error_kind={what}")
                        };
                        view! { <a class="failchip" href=href>{format!("{what} × {n}")}</a> }
                    }).collect_view()}
                </div>
            })}
            {move || editing.get().then(|| view! {
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
            })}
            <CanAct action=Perm::EditEndpoint>
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
                {(!stats.is_ops).then(|| view! {
                    <NotInPortal>
                    <button type="button" data-testid="ops-endpoint-button" on:click=move |_| { make_ops.dispatch(()); }>"Send operations alerts here"</button>
                    </NotInPortal>
                })}
                <ConfirmButton label="Delete" class="link danger" testid="delete-endpoint-button" confirm="Delete"
                    title=format!("Delete endpoint #{id}?")
                    what="Nothing is sent to it any more; its waiting attempts end as dead letters (endpoint deleted). Its delivery history stays for the retention window."
                    pending=Signal::derive(move || remove.pending().get())
                    on_confirm=move || { remove.dispatch(()); }/>
                {move || secret.get().map(|s| view! { <code data-testid="endpoint-secret">{s.clone()}</code> <CopyButton text=s.clone()/> })}
                {move || test_row.get().map(|r| view! {
                    <span data-testid="test-send-result" data-status=r.status.as_str()>
                        "test.ping: "<StatusBadge status=r.status/>" "{r.response_status.map(|c| c.to_string())}" "{r.error.clone()}
                    </span>
                })}
                {move || message.get().map(|(ok, m)| view! { <span class=if ok { "note ok" } else { "note error" } role="status">{m}</span> })}
            </div>
            </CanAct>
        </section>
    }
}
