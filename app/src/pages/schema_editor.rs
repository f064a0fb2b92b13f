//! The catalogue's schema editor (`data-testid="schema-editor"`): a type's JSON Schema
//! edited as text beside the type's latest event. While the owner types, the text is
//! checked as JSON at once and, a moment after the last key, compiled by the server
//! exactly as a save would be and tried on the example, so a schema is never saved
//! blind. Escape closes it.

use leptos::{html, prelude::*};

use crate::{
    components::{confirm::ConfirmButton, widgets::error_text},
    server_fns::schemas::{
        get_event_schema, remove_event_schema, set_event_schema, try_event_schema,
    },
};

/// Milliseconds after the last key before the server tries the text.
const SETTLE_MS: u64 = 350;

/// What the editor opens on: the type, its latest event (JSON text), whether it has a
/// schema already.
#[derive(Clone, Debug, PartialEq)]
pub struct Editing {
    pub event_type: String,
    pub example: Option<String>,
    pub has_schema: bool,
}

/// What the server made of the text.
#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    Checking,
    Refused(String),
    ExampleFails(String),
    Passes { example: bool },
}

#[component]
pub fn SchemaEditor(editing: Editing, on_close: Callback<bool>) -> impl IntoView {
    let Editing {
        event_type,
        example,
        has_schema,
    } = editing;
    let text = RwSignal::new(String::new());
    let verdict = RwSignal::new(None::<Verdict>);
    let area = NodeRef::<html::Textarea>::new();
    let json_error = Memo::new(move |_| {
        serde_json::from_str::<serde_json::Value>(&text.get())
            .err()
            .map(|e| format!("Not JSON yet: {e}."))
    });
    let settle = live_check(text, json_error, verdict, example.clone());

    // The stored schema, or a first draft from the example, or an empty object.
    {
        let (event_type, example, settle) = (event_type.clone(), example.clone(), settle.clone());
        leptos::task::spawn_local(async move {
            let stored = if has_schema {
                get_event_schema(event_type).await.ok().flatten()
            } else {
                None
            };
            let start = stored.unwrap_or_else(|| draft(example.as_deref()));
            text.set(start);
            settle();
            if let Some(a) = area.get_untracked() {
                let _ = a.focus();
            }
        });
    }

    let save = Action::new({
        let event_type = event_type.clone();
        move |schema: &String| set_event_schema(event_type.clone(), schema.clone())
    });
    let remove = Action::new({
        let event_type = event_type.clone();
        move |_: &()| remove_event_schema(event_type.clone())
    });
    Effect::new(move |_| {
        if matches!(save.value().get(), Some(Ok(_))) || matches!(remove.value().get(), Some(Ok(())))
        {
            on_close.run(true);
        }
    });

    let label_id = format!("schema-of-{}", event_type.replace('.', "-"));
    let (section_label, heading_id) = (label_id.clone(), label_id.clone());
    let example_view = example.clone().map(|e| view! {
        <div class="schema-example">
            <h3>"Latest event's data"</h3>
            <pre class="code" data-testid="schema-example">{crate::components::widgets::pretty(&e)}</pre>
        </div>
    });
    let from_example = example.clone().map(|e| {
        let settle = settle.clone();
        view! {
            <button type="button" data-testid="schema-from-example" title="Replace the text with a schema every field of the example fits"
                on:click=move |_| { text.set(draft(Some(&e))); settle(); }>"Start from the example"</button>
        }
    });
    let can_save = move || {
        json_error.get().is_none()
            && !matches!(
                verdict.get(),
                Some(Verdict::Refused(_)) | Some(Verdict::Checking) | None
            )
            && !save.pending().get()
    };
    let what = format!("Events of type {event_type} are no longer checked against a schema.");
    view! {
        <section class="schema-panel" aria-labelledby=section_label data-testid="schema-panel"
            on:keydown=move |ev| if ev.key() == "Escape" { on_close.run(false) }>
            <div class="schema-edit">
                <h2 id=heading_id>{format!("Schema of {event_type}")}</h2>
                <p class="muted">"JSON Schema, draft 2020-12: at most 64 KiB, references within it only (#…). Events whose data fails it are refused (422) with the path."</p>
                <textarea class="code" data-testid="schema-editor" name="schema" spellcheck="false" rows="18" node_ref=area
                    aria-labelledby=label_id aria-describedby="schema-status"
                    prop:value=move || text.get()
                    on:input={
                        let settle = settle.clone();
                        move |ev| { text.set(event_target_value(&ev)); verdict.set(None); settle(); }
                    }></textarea>
                <div id="schema-status" role="status" aria-live="polite">{move || status_line(json_error.get(), verdict.get())}</div>
                {move || save.value().get().and_then(|r| r.err()).map(|e| view! { <p class="error" role="alert">{error_text(&e)}</p> })}
                {move || remove.value().get().and_then(|r| r.err()).map(|e| view! { <p class="error" role="alert">{error_text(&e)}</p> })}
                <div class="dialog-actions">
                    <button type="button" class="primary" data-testid="save-schema" disabled=move || !can_save()
                        on:click=move |_| { save.dispatch(text.get_untracked()); }>"Save schema"</button>
                    {from_example}
                    {has_schema.then(|| view! {
                        <ConfirmButton label="Remove schema" class="danger" testid="remove-schema" confirm="Remove"
                            title="Remove this schema?" what=what.clone()
                            pending=Signal::derive(move || remove.pending().get())
                            on_confirm=move || { remove.dispatch(()); }/>
                    })}
                    <button type="button" data-testid="close-schema" on:click=move |_| on_close.run(false)>"Close"</button>
                </div>
            </div>
            {example_view}
        </section>
    }
}

/// Has the server try the text a moment after the last key (only text that is JSON, and
/// only the latest: an answer to older text is dropped). Returns what each change calls.
fn live_check(
    text: RwSignal<String>,
    json_error: Memo<Option<String>>,
    verdict: RwSignal<Option<Verdict>>,
    example: Option<String>,
) -> impl Fn() + Clone + 'static {
    let round = StoredValue::new(0u64);
    let try_now = move || {
        if json_error.get_untracked().is_some() {
            return;
        }
        verdict.set(Some(Verdict::Checking));
        let (schema, example, mine) = (text.get_untracked(), example.clone(), round.get_value());
        leptos::task::spawn_local(async move {
            let v = match try_event_schema(schema, example.clone()).await {
                Err(e) => Verdict::Refused(error_text(&e)),
                Ok(Some(failure)) => Verdict::ExampleFails(failure),
                Ok(None) => Verdict::Passes {
                    example: example.is_some(),
                },
            };
            if round.get_value() == mine {
                verdict.set(Some(v));
            }
        });
    };
    move || {
        round.update_value(|r| *r += 1);
        let mine = round.get_value();
        let try_now = try_now.clone();
        set_timeout(
            move || {
                if round.get_value() == mine {
                    try_now();
                }
            },
            std::time::Duration::from_millis(SETTLE_MS),
        );
    }
}

/// What the text is: not JSON, being tried, refused, failed by the example, or good.
fn status_line(json_error: Option<String>, verdict: Option<Verdict>) -> AnyView {
    if let Some(e) = json_error {
        return view! { <p class="error" data-testid="schema-status">{e}</p> }.into_any();
    }
    match verdict {
        None | Some(Verdict::Checking) => view! { <p class="muted" data-testid="schema-status">"Checking…"</p> }.into_any(),
        Some(Verdict::Refused(e)) => view! { <p class="error" data-testid="schema-status">{format!("Would be refused: {e}")}</p> }.into_any(),
        Some(Verdict::ExampleFails(f)) => view! { <p class="warn" data-testid="schema-status">{format!("A valid schema, but the latest event fails it: {f}")}</p> }.into_any(),
        Some(Verdict::Passes { example: true }) => view! { <p class="ok" data-testid="schema-status">"A valid schema; the latest event passes it."</p> }.into_any(),
        Some(Verdict::Passes { example: false }) => view! { <p class="ok" data-testid="schema-status">"A valid schema (no event of this type yet to try it on)."</p> }.into_any(),
    }
}

/// A first draft: from the example when there is one, else an object of anything.
fn draft(example: Option<&str>) -> String {
    let value = example
        .and_then(|e| serde_json::from_str::<serde_json::Value>(e).ok())
        .map(|v| crate::core::schema_draft::from_example(&v))
        .unwrap_or_else(|| serde_json::json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}));
    serde_json::to_string_pretty(&value).unwrap_or_default()
}
