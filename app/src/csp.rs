//! The Content-Security-Policy of every page: scripts only from this origin or carrying
//! this response's nonce (Leptos puts it on its hydration and resource scripts), the
//! WASM bundle allowed to compile, and no framing. A payload that slipped into the page
//! as HTML could still not run.

/// Sets the policy on the page being rendered. Called from the shell, on the server.
#[cfg(feature = "ssr")]
pub fn set_page_policy() {
    use leptos::prelude::use_context;
    let (Some(nonce), Some(res)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) else {
        return;
    };
    let policy = format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    );
    if let Ok(value) = http::HeaderValue::from_str(&policy) {
        res.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}
