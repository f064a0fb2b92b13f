//! `/developers/events`: the event types seen and documented, with an example payload
//! and their JSON Schemas.

use leptos::prelude::*;

use crate::{
    components::{
        hydration::gate,
        layout::Cabinet,
        widgets::{error_text, pretty, Time},
    },
    server_fns::catalogue::event_catalogue,
};

#[component]
pub fn EventsPage() -> impl IntoView {
    let types = Resource::new(|| (), |_| event_catalogue());
    let gate = gate();
    view! {
        <Cabinet title="Event types">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match types.await {
                        Ok(list) => view! {
                            <table class="grid">
                                <thead><tr><th>"Type"</th><th>"Description"</th><th class="num">"Last 14 days"</th><th>"Last seen"</th><th>"Example payload"</th><th>"Schema"</th></tr></thead>
                                <tbody>
                                    {list.into_iter().map(|t| view! {
                                        <tr data-testid="event-type-row">
                                            <td class="mono">{t.event_type.clone()}</td>
                                            <td>{t.documented.clone().unwrap_or_default()}</td>
                                            <td class="num" data-label="Last 14 days">{t.count_14d}</td>
                                            <td data-label="Last seen">{t.last_seen.map(|at| view! { <Time at/> })}</td>
                                            <td>{t.example.as_deref().map(|e| view! { <details><summary>"show"</summary><pre class="code">{pretty(e)}</pre></details> })}</td>
                                            <td inner_html=t.schema_html></td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Suspense>
        </Cabinet>
    }
}
