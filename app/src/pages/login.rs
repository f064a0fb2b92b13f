use leptos::prelude::*;

use crate::auth::Login;

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
    view! {
        <main class="login">
            <h1>"Sign in to Posthorn"</h1>
            <ActionForm action=login>
                <label>"Email"
                    <input type="email" name="email" autocomplete="username" required data-testid="login-email"/>
                </label>
                <label>"Password"
                    <input type="password" name="password" autocomplete="current-password" required data-testid="login-password"/>
                </label>
                <button type="submit" data-testid="login-submit" disabled=move || login.pending().get()>
                    {move || if login.pending().get() { "Signing in…" } else { "Sign in" }}
                </button>
                {move || error().map(|e| view! { <p class="error" role="alert" data-testid="login-error">{e}</p> })}
            </ActionForm>
        </main>
    }
}
