//! `/developers/audit`: manual actions, who did them and when.

use leptos::prelude::*;

use crate::{
    components::{
        hydration::gate,
        layout::Cabinet,
        widgets::{error_text, pretty, Time},
    },
    model::AuditEntry,
    server_fns::catalogue::list_audit,
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
                                    {list.into_iter().map(|e| view! { <AuditRow e/> }).collect_view()}
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

/// One action. What it named beyond its target opens under the target: a native
/// disclosure, so Enter and Space work on it without any script.
#[component]
fn AuditRow(e: AuditEntry) -> impl IntoView {
    let detail = match e.detail.as_str() {
        "{}" => "Nothing more was recorded for this action.".to_string(),
        d => pretty(d),
    };
    view! {
        <tr data-testid="audit-row">
            <td data-label="When"><Time at=e.created_at/></td><td data-label="Who">{e.actor}</td>
            <td class="mono" data-label="Action">{e.action}</td>
            <td class="mono break" data-label="Target">
                <details data-testid="audit-detail"><summary>{e.target}</summary><pre class="code">{detail}</pre></details>
            </td>
        </tr>
    }
}
