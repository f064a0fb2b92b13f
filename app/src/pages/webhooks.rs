//! `/developers/webhooks`: endpoints with their last 24 hours at a glance, and the
//! actions on them: create, edit, disable, reveal and rotate the secret, test send.

use leptos::prelude::*;

use crate::{
    components::{
        hydration::{gate, Gate},
        layout::{Cabinet, CanAct, NotInPortal},
        widgets::{error_text, CopyButton},
    },
    core::permissions::Action as Perm,
    server_fns::{
        catalogue::EventTypeInfo,
        endpoints::{create_endpoint, list_endpoints, EndpointStats},
    },
};

mod card;
mod filter_try;

use card::EndpointCard;

/// The new endpoint's fields.
#[derive(Clone, Copy)]
struct Draft {
    url: RwSignal<String>,
    types: RwSignal<String>,
    description: RwSignal<String>,
}

#[component]
pub fn WebhooksPage() -> impl IntoView {
    let version = RwSignal::new(0u32);
    let endpoints = Resource::new(move || version.get(), |_| list_endpoints());
    let gate = gate();
    let draft = Draft {
        url: RwSignal::new(String::new()),
        types: RwSignal::new("*".to_string()),
        description: RwSignal::new(String::new()),
    };
    // The catalogue (documented and seen types) to pick subscriptions from.
    let catalogue = Resource::new(|| (), |_| crate::server_fns::catalogue::event_catalogue());
    let alerts = super::alerts::alert_settings_resource(version);
    let picker_gate = crate::components::hydration::gate();
    let create = Action::new(move |_: &()| {
        create_endpoint(
            draft.url.get_untracked(),
            draft.types.get_untracked(),
            draft.description.get_untracked(),
        )
    });
    Effect::new(move |_| {
        if let Some(Ok(_)) = create.value().get() {
            // The form starts over for the next endpoint.
            draft.url.set(String::new());
            draft.types.set("*".to_string());
            draft.description.set(String::new());
            version.update(|v| *v += 1);
        }
    });
    view! {
        <Cabinet title="Webhooks">
            <CanAct action=Perm::CreateEndpoint>
            <NewEndpointForm draft create catalogue picker_gate/>
            </CanAct>
            // Not offered the form, the picker's boundary is never drawn: the page is
            // interactive without it.
            {move || {
                let offered = use_context::<crate::model::Viewer>().is_none_or(|v| v.may(Perm::CreateEndpoint));
                (!offered).then(|| picker_gate.open())
            }}
            {move || match create.value().get() {
                Some(Ok(secret)) => view! { <p class="newkey" role="status">"Endpoint added. Signing secret: "<code data-testid="new-endpoint-secret">{secret.clone()}</code>" "<CopyButton text=secret.clone() what="signing secret"/></p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert">{error_text(&e)}</p> }.into_any(),
                None => ().into_any(),
            }}
            <SignatureHelp/>
            <EndpointList endpoints gate version/>
            <NotInPortal><super::alerts::AlertsPanel settings=alerts/></NotInPortal>
        </Cabinet>
    }
}

type CatalogueResource = Resource<Result<Vec<EventTypeInfo>, ServerFnError>>;

/// URL, event types (typed, or picked from the catalogue) and description.
#[component]
fn NewEndpointForm(
    draft: Draft,
    create: Action<(), Result<String, ServerFnError>>,
    catalogue: CatalogueResource,
    picker_gate: Gate,
) -> impl IntoView {
    let Draft {
        url,
        types,
        description,
    } = draft;
    view! {
        <form class="filters" on:submit=move |ev| { ev.prevent_default(); create.dispatch(()); }>
            <input type="url" placeholder="https://your.app/hook" aria-label="Endpoint URL" required data-testid="endpoint-url-input"
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
                                types.update(|t| add_type(t, picked));
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
    }
}

/// Adds a picked type to the typed list (once), which then no longer means every type.
fn add_type(types: &mut String, picked: String) {
    let mut list: Vec<String> = types
        .split([',', ' '])
        .map(str::trim)
        .filter(|x| !x.is_empty() && *x != "*")
        .map(String::from)
        .collect();
    if !list.contains(&picked) {
        list.push(picked);
    }
    *types = list.join(", ");
}

#[component]
fn EndpointList(
    endpoints: Resource<Result<Vec<EndpointStats>, ServerFnError>>,
    gate: Gate,
    version: RwSignal<u32>,
) -> impl IntoView {
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                let content = match endpoints.await {
                    Ok(list) if list.is_empty() => view! {
                        <p class="empty" data-testid="no-endpoints">"No endpoints yet. An endpoint is a URL that receives this project's events: add one above (an "
                            <a href="/inspector">"inspector bin"</a>" shows exactly what arrives), then press Test send on its card."</p>
                    }.into_any(),
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
    }
}

/// What the signature headers on every delivery are and how a receiver checks them: the
/// first thing a new owner's receiver needs, and what a support engineer explains.
#[component]
fn SignatureHelp() -> impl IntoView {
    view! {
        <details class="help" data-testid="signature-help">
            <summary>"How a receiver checks that a delivery comes from Posthorn"</summary>
            <p>"Every delivery is a POST of JSON signed with the endpoint's secret ("<code>"whsec_…"</code>"), twice:"</p>
            <ul>
                <li><code>"X-Botix-Signature: sha256=<hex>"</code>": HMAC-SHA256 of "<code>"{X-Botix-Timestamp}.{raw body}"</code>
                    ", keyed with the secret's text. Right after a rotation it lists two, new and old, for 24 hours."</li>
                <li><code>"webhook-signature: v1,<base64>"</code>" (Standard Webhooks): HMAC-SHA256 of "<code>"{webhook-id}.{webhook-timestamp}.{raw body}"</code>
                    ", keyed with the secret's bytes after "<code>"whsec_"</code>" (base64-decoded). An ed25519 endpoint sends "<code>"v1a,"</code>" signatures instead."</li>
            </ul>
            <p>"Refuse a timestamp more than 5 minutes away, compare in constant time, and de-duplicate on "<code>"X-Event-Id"</code>
                " (the same on every retry). The client libraries do all of it in one call: "<code>"verify(body, headers, secret)"</code>"."</p>
        </details>
    }
}
