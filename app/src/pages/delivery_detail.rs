//! One attempt expanded in the deliveries list: what was sent and what came back, every
//! attempt of the event to the endpoint, and Retry and Redirect.

use crate::core::{endpoint_url::broker_of, AttemptId};
use chrono::Utc;
use leptos::prelude::*;

use crate::{
    components::{
        layout::CanAct,
        widgets::{
            absolute, error_text, pretty, relative, CopyButton, HeaderTable, OrderingKey,
            StatusBadge, Time, WaitingBehind,
        },
    },
    core::status::{DeliveryStatus, ErrorKind},
    model::{DeliveryDetail, DeliveryRow},
    server_fns::deliveries::{get_delivery_detail, redirect_delivery, retry_delivery},
};

type DetailResource = Resource<Result<DeliveryDetail, ServerFnError>>;

#[component]
pub fn Detail(
    row: DeliveryRow,
    rows: RwSignal<Vec<DeliveryRow>>,
    tick: RwSignal<u32>,
) -> impl IntoView {
    let (project_id, id) = (row.project_id, row.id);
    let detail = Resource::new(move || (), move |_| get_delivery_detail(project_id, id));
    // While one of its attempts waits or runs, the list below follows it.
    Effect::new(move |_| {
        if tick.get().is_multiple_of(2) {
            let live = detail.with_untracked(|d| {
                d.as_ref()
                    .and_then(|d| d.as_ref().ok())
                    .is_some_and(|d| d.attempts.iter().any(|a| a.status.is_live()))
            });
            if live {
                detail.refetch();
            }
        }
    });
    view! {
        <div class="detail" data-testid="delivery-detail">
            <CanAct>
            <Actions row detail rows/>
            </CanAct>
            // A Transition: refreshing the attempts keeps what is shown until they arrive.
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match detail.await {
                        Ok(d) => view! {
                            <Facts r=d.row.clone()/>
                            <Attempts attempts=d.attempts.clone() current=d.row.id.get() tick/>
                            <Panes response_status=d.row.response_status broker=broker_of(&d.row.target_url) d/>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    }
                })}
            </Transition>
        </div>
    }
}

/// Retry and Redirect, with what each answered.
#[component]
fn Actions(
    row: DeliveryRow,
    detail: DetailResource,
    rows: RwSignal<Vec<DeliveryRow>>,
) -> impl IntoView {
    let (project_id, id) = (row.project_id, row.id);
    // An erased event has nothing left to send: Retry and Redirect are off, and say why.
    let erased = move || {
        detail
            .get()
            .and_then(Result::ok)
            .is_some_and(|d| d.erased.is_some())
    };
    let why = move || erased().then_some("This event's data was erased: nothing is left to send.");
    // One attempt of the event to the endpoint waits or runs already: a Retry would be
    // refused, so it is off and says why (Redirect, to a bin, still goes).
    let live = move || {
        detail
            .get()
            .and_then(Result::ok)
            .is_some_and(|d| d.attempts.iter().any(|a| a.status.is_live()))
    };
    let retry_why = move || {
        why().or_else(|| {
            live().then_some(
                "An attempt of this event to this endpoint is already pending or in flight: it goes out on its own.",
            )
        })
    };
    let message = RwSignal::new(None::<(bool, String)>);
    // A Redirect's own bin, also after a reload.
    let bin_link = RwSignal::new(
        (row.trigger == crate::core::status::Trigger::Redirect)
            .then(|| crate::components::widgets::bin_of(&row.target_url))
            .flatten(),
    );
    let bin_input = RwSignal::new(String::new());
    let retry = Action::new(move |_: &()| retry_delivery(project_id, id));
    let redirect =
        Action::new(move |bin: &Option<String>| redirect_delivery(project_id, id, bin.clone()));
    Effect::new(move |_| match retry.value().get() {
        Some(Ok(new_row)) => {
            message.set(Some((
                true,
                format!("Retry queued as {}.", new_row.request_id),
            )));
            rows.update(|v| v.insert(0, new_row));
            // The attempts below gain the new one.
            detail.refetch();
        }
        Some(Err(e)) => message.set(Some((false, error_text(&e)))),
        None => {}
    });
    Effect::new(move |_| match redirect.value().get() {
        Some(Ok((new_row, bin))) => {
            message.set(Some((
                true,
                format!("Redirected as {}.", new_row.request_id),
            )));
            bin_link.set(Some(bin));
            rows.update(|v| v.insert(0, new_row));
        }
        Some(Err(e)) => message.set(Some((false, error_text(&e)))),
        None => {}
    });
    view! {
        <div class="actions">
            // Off by aria-disabled, not disabled: the button keeps the keyboard's focus
            // while its request runs and once the new attempt is pending.
            <button type="button" data-testid="retry-button" class="primary"
                aria-disabled=move || (retry.pending().get() || erased() || live()).to_string() title=retry_why
                on:click=move |_| {
                    if !(retry.pending().get_untracked() || erased() || live()) {
                        retry.dispatch(());
                    }
                }>"Retry"</button>
            <button type="button" data-testid="redirect-button"
                disabled=move || redirect.pending().get() || erased() title=why
                on:click=move |_| {
                    let b = bin_input.get_untracked();
                    redirect.dispatch(Some(b).filter(|b| !b.trim().is_empty()));
                }>"Redirect to inspector"</button>
            <input type="text" class="bin-input" placeholder="bin URL (empty: a new bin)" aria-label="Inspector bin"
                prop:value=move || bin_input.get() on:input=move |ev| bin_input.set(event_target_value(&ev))/>
            {move || bin_link.get().map(|b| view! {
                <a data-testid="bin-link" href=format!("/inspector/{b}") target="_blank">{format!("Open bin {b}")}</a>
            })}
            {move || message.get().map(|(ok, m)| view! {
                <span class=if ok { "note ok" } else { "note error" } role="status" data-testid="action-message">{m}</span>
            })}
        </div>
    }
}

/// The attempt's facts: ids, target, outcome and times.
#[component]
fn Facts(r: DeliveryRow) -> impl IntoView {
    let broker = broker_of(&r.target_url);
    view! {
        <dl class="facts">
            <dt>"Request id"</dt><dd class="mono" data-testid="detail-request-id">{r.request_id.clone()}" "<CopyButton text=r.request_id.clone() what="request id"/></dd>
            <dt>"Event id"</dt><dd class="mono">{r.event_id.to_string()}" "<CopyButton text=r.event_id.to_string() what="event id"/></dd>
            {r.ordering_key.clone().map(|k| view! { <dt>"Ordering key"</dt><dd><OrderingKey key=k/>" "{r.waits_for.clone().map(|e| view! { <WaitingBehind event_id=e/> })}</dd> })}
            <dt>{if broker.is_some() { "Published to" } else { "Target URL" }}</dt><dd class="mono break">{r.target_url.clone()}</dd>
            <dt>"Attempt"</dt><dd>{r.attempt}" · "{r.trigger.label()}{r.triggered_by.clone().map(|b| format!(" by {b}"))}</dd>
            <dt>"Response"</dt><dd>{match (r.response_status, broker) {
                (Some(s), _) => s.to_string(),
                (None, Some(b)) => format!("{b}'s answer below (no HTTP status)"),
                (None, None) => "no response".into(),
            }}</dd>
            <dt>"Duration"</dt><dd>{r.duration_ms.map(|d| format!("{d} ms")).unwrap_or_else(|| "—".into())}</dd>
            <dt>"Scheduled"</dt><dd>{absolute(r.scheduled_at)}</dd>
            <dt>"Started"</dt><dd>{r.started_at.map(absolute).unwrap_or_else(|| "—".into())}</dd>
            <dt>"Finished"</dt><dd>{r.finished_at.map(absolute).unwrap_or_else(|| "—".into())}</dd>
            {r.error.clone().map(|e| view! { <dt>"Error"</dt><dd class="err">
                <span data-testid="error-explained">{r.explained.clone().unwrap_or_else(|| e.clone())}</span>
                <details data-testid="error-details"><summary>"Details"</summary>
                    <code class="break">{format!("{}: {e}", r.error_kind.map_or("", ErrorKind::as_str))}</code>
                </details>
            </dd> })}
        </dl>
    }
}

/// Every attempt of the event to the endpoint, the shown one marked; a pending one counts
/// down to its next try.
#[component]
fn Attempts(attempts: Vec<DeliveryRow>, current: i64, tick: RwSignal<u32>) -> impl IntoView {
    view! {
        <section>
            <h3>"Attempts of this event to this endpoint"</h3>
            <ol class="timeline">
                {attempts.into_iter().map(|a| {
                    let current = a.id == AttemptId::new(current);
                    let scheduled = a.scheduled_at;
                    let pending = a.status == DeliveryStatus::Pending;
                    view! {
                        <li class:current=current>
                            <StatusBadge status=a.status/>
                            " #"{a.attempt}" "{a.trigger.label()}" · "
                            <a class="mono" data-testid="attempt-link" href=format!("/developers/deliveries?q={}", a.request_id)>{a.request_id.clone()}</a>" · "
                            {a.response_status.map(|s| s.to_string()).unwrap_or_default()}" "
                            <Time at=a.created_at/>
                            {pending.then(|| view! {
                                <span class="countdown">{move || { tick.get(); format!(" next attempt {}", relative(scheduled, Utc::now())) }}</span>
                            })}
                        </li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
}

/// What was sent (payload, or when it was erased, and headers) beside what came back.
#[component]
fn Panes(
    d: DeliveryDetail,
    response_status: Option<i16>,
    broker: Option<&'static str>,
) -> impl IntoView {
    view! {
        <div class="panes">
            <section>
                {match d.erased {
                    Some((at, erasure)) => view! {
                        <h3>"Payload"</h3>
                        <p class="erased" data-testid="detail-erased">
                            {format!("Erased on {} (erasure #{erasure})", absolute(at))}
                        </p>
                    }.into_any(),
                    None => view! {
                        <h3>"Payload " <CopyButton text=d.payload.clone() what="payload"/> " "
                            {broker.is_none().then(|| view! { <CopyButton text=d.curl.clone() what="the request" label="Copy as curl"/> })}</h3>
                        <pre class="code" data-testid="detail-payload">{d.payload.clone()}</pre>
                    }.into_any(),
                }}
                <h3>"Request headers"</h3>
                <HeaderTable headers=d.request_headers.clone()/>
            </section>
            <section>
                <h3>{match broker {
                    Some(b) => format!("{b}'s answer"),
                    None => format!("Response {}", response_status.map(|s| s.to_string()).unwrap_or_default()),
                }}</h3>
                <HeaderTable headers=d.response_headers.clone()/>
                <pre class="code" data-testid="detail-response">{d.response_body.as_deref().map(pretty).unwrap_or_else(|| "(no body)".into())}</pre>
            </section>
        </div>
    }
}
