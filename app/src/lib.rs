//! Posthorn's application crate: domain code, data access (server side), pages and
//! server functions. The `ssr` build runs in the server; `hydrate` in the browser.

#![recursion_limit = "512"]

pub mod auth;
pub mod bundle;
pub mod components;
pub mod core;
pub mod csp;
pub mod delivery_filter;
pub mod error;
pub mod model;
pub mod pages;
pub mod server_fns;

#[cfg(feature = "ssr")]
pub mod cfg;
#[cfg(feature = "ssr")]
pub mod ctx;
#[cfg(feature = "ssr")]
pub mod db;
#[cfg(feature = "ssr")]
pub mod use_cases;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, HashedStylesheet, MetaTags, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path, SsrMode,
};

pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    csp::set_page_policy();
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Ccircle cx='8' cy='8' r='7' fill='%232457d6'/%3E%3C/svg%3E"/>
                <HashedStylesheet options=options.clone() id="leptos"/>
                <HydrationScripts options=bundle::options_for_this_page(&options)/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The router of the deliveries page's own bundle (`frontend`'s `deliveries` feature): that
/// page alone, so the page support lives on loads none of the other pages' code. A link to
/// any other page loads it from the server, which sends the bundle of every page.
#[component]
pub fn DeliveriesApp() -> impl IntoView {
    provide_meta_context();
    components::hydration::provide_hydration_mark();
    view! {
        <Title text="Posthorn"/>
        <Router>
            <Routes fallback=LoadFromServer>
                <Route path=path!("/developers/deliveries") view=pages::deliveries::DeliveriesPage ssr=SsrMode::Async/>
            </Routes>
        </Router>
    }
}

/// A page this bundle does not hold: the browser loads it whole (a new history entry, as a
/// link's would be).
#[component]
fn LoadFromServer() -> impl IntoView {
    let location = leptos_router::hooks::use_location();
    let mut href = location.pathname.get_untracked();
    let search = location.search.get_untracked();
    if !search.is_empty() {
        href = format!("{href}?{search}");
    }
    href.push_str(&location.hash.get_untracked());
    if let Err(e) = window().location().assign(&href) {
        leptos::logging::error!("could not open {href}: {e:?}");
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    components::hydration::provide_hydration_mark();
    view! {
        <Title text="Posthorn"/>
        <Router>
            <Routes fallback=pages::not_found::NotFound>
                <Route path=path!("/") view=pages::home::Landing/>
                <Route path=path!("/login") view=pages::login::LoginPage/>
                // Rendered whole before the first byte: complete without the WASM, and the
                // data the page hydrates with is all inline before the scripts run.
                <Route path=path!("/developers") view=pages::cabinet::CabinetHome ssr=SsrMode::Async/>
                <Route path=path!("/developers/deliveries") view=pages::deliveries::DeliveriesPage ssr=SsrMode::Async/>
                <Route path=path!("/developers/webhooks") view=pages::webhooks::WebhooksPage ssr=SsrMode::Async/>
                <Route path=path!("/developers/keys") view=pages::keys::KeysPage ssr=SsrMode::Async/>
                <Route path=path!("/developers/events") view=pages::events::EventsPage ssr=SsrMode::Async/>
                <Route path=path!("/developers/team") view=pages::team::TeamPage ssr=SsrMode::Async/>
                <Route path=path!("/developers/audit") view=pages::audit::AuditPage ssr=SsrMode::Async/>
                <Route path=path!("/invite/:token") view=pages::team::InvitePage ssr=SsrMode::Async/>
                <Route path=path!("/alerts/confirm/:token") view=pages::alert_confirm::ConfirmAlertAddressPage ssr=SsrMode::Async/>
                <Route path=path!("/inspector") view=pages::inspector::InspectorHome/>
                <Route path=path!("/inspector/:id") view=pages::inspector::BinPage ssr=SsrMode::Async/>
            </Routes>
        </Router>
    }
}
