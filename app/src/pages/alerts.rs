//! The alerts panel under the endpoints: where notices go, after how long a failing
//! endpoint is reported, whether the signed-in member gets them by e-mail (and whether
//! the address is confirmed yet), the project's alert addresses and the project's latest
//! notices. One form, one server function to read it: the panel is part of the first
//! download, so it is kept small.

use leptos::{html, prelude::*};

use crate::{
    components::{hydration::gate, widgets::error_text},
    server_fns::alerts::{
        alert_settings, resend_alert_confirmation, save_alert_settings, MAIL_OFF,
    },
};

/// The panel's data, read by the page before its frame: a resource made inside the
/// frame's Suspense was made after the frame's own on the server, in an order hydration
/// did not always repeat, and the panel hydrated against another resource's answer
/// (a panic in about one load in four).
pub fn alert_settings_resource(
    version: RwSignal<u32>,
) -> Resource<Result<crate::server_fns::alerts::AlertsView, ServerFnError>> {
    Resource::new(move || version.get(), |_| alert_settings())
}

#[component]
pub fn AlertsPanel(
    settings: Resource<Result<crate::server_fns::alerts::AlertsView, ServerFnError>>,
) -> impl IntoView {
    let gate = gate();
    let minutes = NodeRef::<html::Input>::new();
    let email = NodeRef::<html::Input>::new();
    let save = Action::new(move |_: &()| {
        let m = minutes
            .get_untracked()
            .map(|i| i.value())
            .unwrap_or_default();
        // Support staff have no e-mail choice (no box): false changes nothing for them.
        let on = email.get_untracked().is_some_and(|i| i.checked());
        save_alert_settings(m.trim().parse().unwrap_or(0), on)
    });
    let resend = Action::new(|_: &()| resend_alert_confirmation());
    let support = use_context::<crate::model::Viewer>().is_some_and(|v| v.is_support);
    view! {
        <section class="alerts" data-testid="alerts-panel" aria-labelledby="alerts-title">
            <h2 id="alerts-title">"Alerts"</h2>
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match settings.await {
                        Ok(s) => view! {
                            {match s.ops_endpoint {
                                Some(url) => view! { <p>"Notices go to "<code data-testid="alerts-ops-endpoint">{url}</code>", signed like every delivery."</p> }.into_any(),
                                None => view! { <p class="note">"No operations endpoint yet: choose one with “Send operations alerts here” on its card."</p> }.into_any(),
                            }}
                            <form class="filters" on:submit=move |ev| { ev.prevent_default(); save.dispatch(()); }>
                                <label>"Report an endpoint as failing after "
                                    <input type="number" min="1" max="10080" class="narrow" data-testid="failing-after-input" node_ref=minutes
                                        aria-label="Minutes of failures before endpoint.failing" value=s.failing_after_minutes.to_string()/>
                                    " minutes of failed attempts"</label>
                                {(!support).then(|| view! {
                                    <label class="check">
                                        // Where no mail can be sent the box cannot be ticked (only untick
                                        // a choice made before e-mail was turned off).
                                        <input type="checkbox" data-testid="email-alerts-toggle" node_ref=email checked=s.email_alerts
                                            disabled=!s.mail_configured && !s.email_alerts aria-describedby="mail-off"/>
                                        " E-mail me these alerts"
                                    </label>
                                })}
                                {(!s.mail_configured).then(|| view! { <small class="note" id="mail-off" data-testid="mail-off">{MAIL_OFF}</small> })}
                                <button type="submit" data-testid="save-alerts-button">"Save"</button>
                            </form>
                            {s.address.filter(|_| s.mail_configured).map(|(address, confirmed)| if confirmed {
                                view! { <p data-testid="alert-address-state" data-state="confirmed">"Alerts are mailed to "<code>{address}</code>"."</p> }.into_any()
                            } else {
                                view! {
                                    <p data-testid="alert-address-state" data-state="waiting">
                                        <code>{address}</code>" is waiting for confirmation: alerts are mailed once the link sent to it is followed. "
                                        <button type="button" data-testid="resend-confirmation-button" on:click=move |_| { resend.dispatch(()); }>"Send again"</button>
                                    </p>
                                }.into_any()
                            })}
                            <div inner_html=s.addresses_html></div>
                            <div inner_html=s.recent_html></div>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Transition>
            {move || resend.value().get().map(|r| match r {
                Ok(()) => view! { <p class="note ok" role="status" data-testid="resend-message">"A new confirmation link is on its way."</p> }.into_any(),
                Err(e) => view! { <p class="note error" role="alert" data-testid="resend-message">{error_text(&e)}</p> }.into_any(),
            })}
            {move || save.value().get().map(|r| match r {
                Ok(()) => view! { <p class="note ok" role="status" data-testid="alerts-message">"Alert settings saved."</p> }.into_any(),
                Err(e) => view! { <p class="note error" role="alert" data-testid="alerts-message">{error_text(&e)}</p> }.into_any(),
            })}
        </section>
    }
}
