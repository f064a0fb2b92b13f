//! `/developers/keys`: API keys (created, shown once, revoked) beside the plan's limit.

use leptos::prelude::*;

use crate::{
    components::{
        confirm::ConfirmButton,
        hydration::gate,
        layout::{Cabinet, CanAct},
        widgets::{error_text, CopyButton, Time},
    },
    core::permissions::Action as Perm,
    server_fns::keys::{create_key, list_keys, revoke_key},
};

#[component]
pub fn KeysPage() -> impl IntoView {
    let version = RwSignal::new(0u32);
    let keys = Resource::new(move || version.get(), |_| list_keys());
    let gate = gate();
    let name = RwSignal::new(String::new());
    let create = Action::new(move |n: &String| create_key(n.clone()));
    let revoke = Action::new(move |id: &i64| revoke_key(*id));
    Effect::new(move |_| {
        if create.value().get().is_some() || revoke.value().get().is_some() {
            version.update(|v| *v += 1);
        }
    });
    view! {
        <Cabinet title="API keys">
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match keys.await {
                        Ok(k) => view! {
                            <p class="muted">"Plan "<strong>{k.plan.clone()}</strong>": "{k.per_minute}" requests per minute per key. Keys are stored hashed: a key is shown once, when it is created."</p>
                            <CanAct action=Perm::ManageKeys><form class="filters" on:submit=move |ev| { ev.prevent_default(); create.dispatch(name.get_untracked()); }>
                                <input type="text" placeholder="Name, e.g. production" aria-label="Key name" data-testid="key-name-input"
                                    prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
                                <button type="submit" class="primary" data-testid="create-key-button">"Create key"</button>
                            </form></CanAct>
                            {move || match create.value().get() {
                                Some(Ok(key)) => view! {
                                    <div class="newkey" role="status">
                                        <p><strong>"Copy this key now: it will not be shown again."</strong></p>
                                        <code data-testid="new-key-value">{key.clone()}</code>" "<CopyButton text=key.clone() what="API key"/>
                                        <FirstUse key=key.clone()/>
                                    </div>
                                }.into_any(),
                                Some(Err(e)) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                                None => ().into_any(),
                            }}
                            {move || revoke.value().get().and_then(|r| r.err()).map(|e| view! { <p class="error">{error_text(&e)}</p> })}
                            <table class="grid">
                                <thead><tr><th>"Name"</th><th>"Key"</th><th>"Created"</th><th>"Last used"</th><th>"State"</th><th></th></tr></thead>
                                <tbody>
                                    {k.keys.is_empty().then(|| view! {
                                        <tr><td colspan="6" class="muted" data-testid="no-keys">"No keys yet. Your platform sends events with a key: create one above, and the page shows how to send the first event with it."</td></tr>
                                    })}
                                    {k.keys.into_iter().map(|key| {
                                        let id = key.id;
                                        let revoked = key.revoked_at.is_some();
                                        view! {
                                            <tr data-testid="key-row" data-revoked=revoked.to_string()>
                                                <td>{key.name.clone()}</td>
                                                <td class="mono" data-label="Key">{format!("{}…", key.prefix)}</td>
                                                <td data-label="Created"><Time at=key.created_at/></td>
                                                <td data-label="Last used">{key.last_used_at.map(|t| view! { <Time at=t/> }.into_any()).unwrap_or_else(|| "never".into_any())}</td>
                                                <td>{if revoked { view! { <span class="badge badge-dead_letter">"Revoked"</span> }.into_any() } else { view! { <span class="badge badge-succeeded">"Active"</span> }.into_any() }}</td>
                                                <td>{(!revoked).then(|| view! {
                                                    <CanAct action=Perm::ManageKeys><ConfirmButton label="Revoke" testid="revoke-key-button" confirm="Revoke"
                                                        title=format!("Revoke the key {}…?", key.prefix)
                                                        what="Requests with this key are refused from now on (401). A revoked key cannot be restored: make a new one."
                                                        pending=Signal::derive(move || revoke.pending().get())
                                                        on_confirm=move || { revoke.dispatch(id); }/></CanAct>
                                                })}</td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Transition>
        </Cabinet>
    }
}

/// The first event sent with a new key: curl, Python and TypeScript, each with the key
/// and this server's address filled in, ready to copy.
#[component]
fn FirstUse(key: String) -> impl IntoView {
    let base = window().location().origin().unwrap_or_default();
    let curl = format!(
        "curl {base}/public/v1/events \\\n  -H \"Authorization: Bearer {key}\" \\\n  -H \"Content-Type: application/json\" \\\n  -d '{{\"event\":\"order.paid\",\"data\":{{\"amount\":1200}}}}'"
    );
    let python = format!(
        "from posthorn import Client\n\nclient = Client(\"{key}\", base_url=\"{base}\")\nclient.events.send(\"order.paid\", {{\"amount\": 1200}})"
    );
    let typescript = format!(
        "import {{ Client }} from \"@posthorn/sdk\";\n\nconst client = new Client(\"{key}\", {{ baseUrl: \"{base}\" }});\nawait client.events.send(\"order.paid\", {{ amount: 1200 }});"
    );
    view! {
        <div class="first-use" data-testid="key-first-use">
            <p>"Send a first event with it. Every endpoint subscribed to "<code>"order.paid"</code>" gets it, signed; "
                <a href="/developers/deliveries">"Deliveries"</a>" shows each attempt. The answer is "<code>"202"</code>" with the event's id."</p>
            {[("curl", curl), ("Python", python), ("TypeScript", typescript)].into_iter().map(|(lang, code)| view! {
                <details open=lang == "curl">
                    <summary>{lang}" "<CopyButton text=code.clone() what=format!("the {lang} example")/></summary>
                    <pre class="code" data-testid=format!("first-use-{}", lang.to_lowercase())>{code.clone()}</pre>
                </details>
            }).collect_view()}
        </div>
    }
}
