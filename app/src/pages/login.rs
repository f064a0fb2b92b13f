use leptos::{html, prelude::*, server_fn::ServerFn};

use crate::{auth::Login, components::widgets::input_value};

#[component]
pub fn LoginPage() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    let error = move || {
        login.value().get().and_then(|r| r.err()).map(|e| {
            let text = e.to_string();
            // Server errors arrive as "error running server function: <message>".
            text.rsplit(": ").next().unwrap_or(&text).to_string()
        })
    };
    let (email, password) = (NodeRef::<html::Input>::new(), NodeRef::<html::Input>::new());
    // Where the page that sent here was (`/login?next=…`); the server checks it again.
    let next = leptos_router::hooks::use_query_map()
        .get_untracked()
        .get("next")
        .filter(|n| crate::core::next_path::safe_next(n).is_some());
    let next_field = next.clone().unwrap_or_default();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        login.dispatch(Login {
            email: input_value(email),
            password: input_value(password),
            next: next.clone(),
        });
    };
    view! {
        <main class="login">
            <h1>"Sign in to Posthorn"</h1>
            // Before the page hydrates, the browser posts the form to the server function.
            <form method="post" action=Login::url() on:submit=submit>
                <input type="hidden" name="next" value=next_field/>
                <label>"Email"
                    <input type="email" name="email" autocomplete="username" required data-testid="login-email" node_ref=email/>
                </label>
                <label>"Password"
                    <input type="password" name="password" autocomplete="current-password" required data-testid="login-password" node_ref=password/>
                </label>
                <button type="submit" data-testid="login-submit" disabled=move || login.pending().get()>
                    {move || if login.pending().get() { "Signing in…" } else { "Sign in" }}
                </button>
                {move || error().map(|e| view! { <p class="error" role="alert" data-testid="login-error">{e}</p> })}
            </form>
        </main>
    }
}
