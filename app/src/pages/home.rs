use leptos::prelude::*;

#[component]
pub fn Landing() -> impl IntoView {
    view! {
        <main class="narrow">
            <h1>"Posthorn"</h1>
            <p>"Webhook delivery: signed, retried with backoff, dead-lettered, and inspectable."</p>
            <ul>
                <li><a href="/developers">"Developer cabinet"</a></li>
                <li><a href="/inspector">"Webhook inspector"</a></li>
                <li><a href="/public/v1/openapi.json">"Public API (OpenAPI)"</a></li>
            </ul>
        </main>
    }
}
