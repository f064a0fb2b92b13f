#![recursion_limit = "512"]
//! The browser entry: hydrates the server-rendered page. Built twice: with `deliveries`,
//! the deliveries page's own bundle; without, the bundle of every page.

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    // A panic's message on the console is for development; the release bundle leaves the
    // hook's formatting code out (it is part of every page's first load).
    #[cfg(debug_assertions)]
    console_error_panic_hook::set_once();
    #[cfg(feature = "deliveries")]
    leptos::mount::hydrate_body(app::DeliveriesApp);
    #[cfg(not(feature = "deliveries"))]
    leptos::mount::hydrate_body(app::App);
}
