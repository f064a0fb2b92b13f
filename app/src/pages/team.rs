//! `/developers/team`: members of the project, and the signed-in user's password.

use leptos::prelude::*;

use crate::{
    cabinet::{list_members, ChangePassword},
    components::{
        hydration::gate,
        layout::Cabinet,
        widgets::{error_text, Time},
    },
};

#[component]
pub fn TeamPage() -> impl IntoView {
    let members = Resource::new(|| (), |_| list_members());
    let gate = gate();
    let change = ServerAction::<ChangePassword>::new();
    view! {
        <Cabinet title="Team">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match members.await {
                        Ok(list) => view! {
                            <table class="grid">
                                <thead><tr><th>"Member"</th><th>"Role"</th><th>"Since"</th></tr></thead>
                                <tbody>
                                    {list.into_iter().map(|m| view! {
                                        <tr data-testid="member-row"><td>{m.email}</td><td>{m.role}</td><td><Time at=m.since/></td></tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Suspense>
            <h2>"Change your password"</h2>
            <ActionForm action=change attr:class="stack">
                <label>"Current password "<input type="password" name="current" autocomplete="current-password" required data-testid="current-password"/></label>
                <label>"New password (8+ characters) "<input type="password" name="new_password" autocomplete="new-password" minlength="8" required data-testid="new-password"/></label>
                <button type="submit" class="primary" data-testid="change-password-button">"Change password"</button>
                {move || match change.value().get() {
                    Some(Ok(())) => view! { <p class="note ok" role="status">"Password changed."</p> }.into_any(),
                    Some(Err(e)) => view! { <p class="error" role="alert">{error_text(&e)}</p> }.into_any(),
                    None => ().into_any(),
                }}
            </ActionForm>
        </Cabinet>
    }
}
