//! The alerts panel under the endpoints: where notices go, after how long a failing
//! endpoint is reported, whether the signed-in member gets them by e-mail, and the
//! project's latest notices.

use leptos::prelude::*;

use crate::{
    cabinet::{alert_settings, set_email_alerts, set_failing_alert},
    components::{
        hydration::gate,
        widgets::{error_text, Time},
    },
};

#[component]
pub fn AlertsPanel(version: RwSignal<u32>) -> impl IntoView {
    let settings = Resource::new(move || version.get(), |_| alert_settings());
    let gate = gate();
    let minutes = RwSignal::new(String::new());
    let message = RwSignal::new(None::<Result<String, String>>);
    let save = Action::new(move |_: &()| {
        let m = minutes.get_untracked().trim().parse::<i64>().unwrap_or(0);
        set_failing_alert(m)
    });
    let mail = Action::new(move |on: &bool| set_email_alerts(*on));
    Effect::new(move |_| {
        if let Some(r) = save.value().get() {
            message.set(Some(
                r.map(|_| "Alert threshold saved.".into())
                    .map_err(|e| error_text(&e)),
            ));
        }
    });
    Effect::new(move |_| {
        if let Some(r) = mail.value().get() {
            message.set(Some(
                r.map(|_| "E-mail preference saved.".into())
                    .map_err(|e| error_text(&e)),
            ));
            version.update(|v| *v += 1);
        }
    });
    view! {
        <section class="alerts" data-testid="alerts-panel" aria-labelledby="alerts-title">
            <h2 id="alerts-title">"Alerts"</h2>
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match settings.await {
                        Ok(s) => {
                            minutes.set(s.failing_after_minutes.to_string());
                            let ops = match s.ops_endpoint.clone() {
                                Some(url) => view! { <p>"Notices go to "<code data-testid="alerts-ops-endpoint">{url}</code>", signed like every delivery."</p> }.into_any(),
                                None => view! { <p class="note">"No operations endpoint yet: choose one with “Send operations alerts here” on its card."</p> }.into_any(),
                            };
                            view! {
                                {ops}
                                <form class="filters" on:submit=move |ev| { ev.prevent_default(); save.dispatch(()); }>
                                    <label>"Report an endpoint as failing after "
                                        <input type="number" min="1" max="10080" class="narrow" data-testid="failing-after-input"
                                            aria-label="Minutes of failures before endpoint.failing"
                                            prop:value=move || minutes.get() on:input=move |ev| minutes.set(event_target_value(&ev))/>
                                        " minutes of failed attempts"</label>
                                    <button type="submit" data-testid="save-alerts-button">"Save"</button>
                                    <label class="check">
                                        <input type="checkbox" data-testid="email-alerts-toggle" prop:checked=s.email_alerts
                                            on:change=move |ev| { mail.dispatch(event_target_checked(&ev)); }/>
                                        " E-mail me these alerts"
                                        {(!s.mail_configured).then(|| view! { <small class="note">" (e-mail is off on this server: POSTHORN_SMTP_URL)"</small> })}
                                    </label>
                                </form>
                                {if s.recent.is_empty() {
                                    view! { <p class="empty" data-testid="no-notices">"No notices yet. You will see endpoint.failing, endpoint.recovered, endpoint.disabled and delivery.dead_lettered here."</p> }.into_any()
                                } else {
                                    view! {
                                        <table class="grid" data-testid="notices">
                                            <thead><tr><th>"Notice"</th><th>"What happened"</th><th class="num">"When"</th></tr></thead>
                                            <tbody>
                                                {s.recent.into_iter().map(|n| view! {
                                                    <tr data-testid="notice-row" data-kind=n.kind.clone()>
                                                        <td class="mono">{n.kind.clone()}</td>
                                                        <td>{n.summary.clone()}</td>
                                                        <td class="num"><Time at=n.at/></td>
                                                    </tr>
                                                }).collect_view()}
                                            </tbody>
                                        </table>
                                    }.into_any()
                                }}
                            }.into_any()
                        }
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Transition>
            {move || message.get().map(|m| match m {
                Ok(t) => view! { <p class="note ok" role="status" data-testid="alerts-message">{t}</p> }.into_any(),
                Err(t) => view! { <p class="note error" role="alert" data-testid="alerts-message">{t}</p> }.into_any(),
            })}
        </section>
    }
}
