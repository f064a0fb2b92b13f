//! `/developers/events`: the event types seen and documented, with an example payload
//! and their JSON Schemas, which an owner writes and tries in the page's editor.

use leptos::prelude::*;

use crate::{
    components::{
        hydration::gate,
        layout::{Cabinet, CanAct},
        widgets::{error_text, pretty, Time},
    },
    core::permissions::Action as Perm,
    pages::schema_editor::{Editing, SchemaEditor},
    server_fns::catalogue::event_catalogue,
};

#[component]
pub fn EventsPage() -> impl IntoView {
    let version = RwSignal::new(0u32);
    let types = Resource::new(move || version.get(), |_| event_catalogue());
    let editing = RwSignal::new(None::<Editing>);
    let gate = gate();
    // Closing the editor returns the focus to the button that opened it; a save or a
    // removal reads the catalogue again.
    let on_close = Callback::new(move |changed: bool| {
        let t = editing.get_untracked().map(|e| e.event_type);
        editing.set(None);
        if changed {
            version.update(|v| *v += 1);
        } else if let Some(t) = t {
            let button = document().query_selector(&format!("[data-schema-for=\"{t}\"]"));
            if let Ok(Some(b)) = button {
                use wasm_bindgen::JsCast;
                if let Ok(b) = b.dyn_into::<web_sys::HtmlElement>() {
                    let _ = b.focus();
                }
            }
        }
    });
    view! {
        <Cabinet title="Event types">
            <p class="muted" data-testid="catalogue-help">"Types appear here as your platform sends them ("<code>"POST /public/v1/events"</code>
                "), beside the documented ones. Give a type a schema and events whose data does not fit it are refused with the path that failed."</p>
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match types.await {
                        Ok(list) => view! {
                            <table class="grid catalogue">
                                <thead><tr><th>"Type"</th><th>"Description"</th><th class="num">"Last 14 days"</th><th>"Last seen"</th><th>"Example payload"</th><th>"Schema"</th></tr></thead>
                                <tbody>
                                    {list.into_iter().map(|t| {
                                        let has_schema = !t.schema_html.is_empty();
                                        let open = Editing { event_type: t.event_type.clone(), example: t.example.clone(), has_schema };
                                        view! {
                                        <tr data-testid="event-type-row">
                                            <td class="mono">{t.event_type.clone()}</td>
                                            <td>{t.documented.clone().unwrap_or_default()}</td>
                                            <td class="num" data-label="Last 14 days">{t.count_14d}</td>
                                            <td data-label="Last seen">{t.last_seen.map(|at| view! { <Time at/> })}</td>
                                            <td>{t.example.as_deref().map(|e| view! { <details><summary>"show"</summary><pre class="code">{pretty(e)}</pre></details> })}</td>
                                            <td class="schema-cell">
                                                <span inner_html=t.schema_html></span>
                                                {(!has_schema).then(|| view! { <span class="muted">"none "</span> })}
                                                <CanAct action=Perm::EditSchemas>
                                                    <button type="button" class="link" data-testid="edit-schema" data-schema-for=open.event_type.clone()
                                                        aria-label=format!("{} the schema of {}", if has_schema { "Edit" } else { "Add" }, open.event_type)
                                                        on:click=move |_| editing.set(Some(open.clone()))>
                                                        {if has_schema { "edit" } else { "add" }}
                                                    </button>
                                                </CanAct>
                                            </td>
                                        </tr>
                                    }}).collect_view()}
                                </tbody>
                            </table>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Suspense>
            {move || editing.get().map(|e| view! { <SchemaEditor editing=e on_close/> })}
        </Cabinet>
    }
}
