use leptos::prelude::*;

use crate::{
    components::layout::{Cabinet, CanAct},
    core::permissions::Action as Perm,
};

#[component]
pub fn CabinetHome() -> impl IntoView {
    view! {
        <Cabinet title="Developer cabinet">
            <div class="cards">
                <a class="card" href="/developers/deliveries"><h2>"Webhook Delivery"</h2><p>"Every attempt of the last 14 days: expand, Retry, Redirect."</p></a>
                <a class="card" href="/developers/webhooks"><h2>"Webhooks"</h2><p>"Endpoints, secrets, test sends."</p></a>
                // Support may not read keys: no card that leads to a refusal.
                <CanAct action=Perm::ReadKeys><a class="card" href="/developers/keys"><h2>"API keys"</h2><p>"Keys for the public API."</p></a></CanAct>
                <a class="card" href="/developers/events"><h2>"Event types"</h2><p>"The catalogue of event types."</p></a>
                <a class="card" href="/developers/team"><h2>"Team"</h2><p>"Members and passwords."</p></a>
                <a class="card" href="/developers/audit"><h2>"Audit"</h2><p>"Manual actions: who, when, what."</p></a>
                <a class="card" href="/inspector"><h2>"Inspector"</h2><p>"Request bins to see exactly what is sent."</p></a>
            </div>
        </Cabinet>
    }
}
