use leptos::prelude::*;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
            resp.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    view! {
        <main class="narrow">
            <h1>"Not found"</h1>
            <p>"There is nothing here. " <a href="/developers">"Back to the cabinet"</a></p>
        </main>
    }
}
