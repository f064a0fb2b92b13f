//! `/developers/audit`: manual actions, who did them and when.

use leptos::prelude::*;

use crate::{
    cabinet::list_audit,
    components::{
        hydration::gate,
        layout::Cabinet,
        widgets::{error_text, Time},
    },
};

#[component]
pub fn AuditPage() -> impl IntoView {
    let entries = Resource::new(|| (), |_| list_audit());
    let gate = gate();
    view! {
        <Cabinet title="Audit">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match entries.await {
                        Ok(list) if list.is_empty() => view! { <p class="empty">"No manual actions yet."</p> }.into_any(),
                        Ok(list) => view! {
                            <table class="grid">
                                <thead><tr><th>"When"</th><th>"Who"</th><th>"Action"</th><th>"Target"</th></tr></thead>
                                <tbody>
                                    {list.into_iter().map(|e| view! {
                                        <tr data-testid="audit-row"><td><Time at=e.created_at/></td><td>{e.actor}</td><td class="mono">{e.action}</td><td class="mono">{e.target}</td></tr>
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
