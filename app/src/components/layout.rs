//! The `/developers` frame: navigation, signed-in user, project switcher. Anonymous
//! visitors are sent to `/login`.

use crate::core::ProjectId;
use leptos::{prelude::*, server_fn::ServerFn};
use leptos_router::components::{Redirect, A};

use crate::{
    auth::{get_viewer, Logout, SwitchProject},
    components::hydration::gate,
    model::{PortalView, Viewer},
};

#[component]
pub fn Cabinet(#[prop(into)] title: String, children: ChildrenFn) -> impl IntoView {
    let viewer = Resource::new(|| (), |_| get_viewer());
    let children = StoredValue::new(children);
    let title = StoredValue::new(title);
    let gate = gate();
    // Reached by the router (after signing in, or a link), not by loading the page: the
    // keyboard's focus goes to the page's content, as a new page's would start at its top.
    #[cfg(feature = "hydrate")]
    let navigated = !Owner::current_shared_context().is_some_and(|c| c.during_hydration());
    view! {
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                let content = match viewer.await {
                    Ok(Some(v)) => {
                    // Pages read who is looking (a portal viewer sees no action buttons).
                    provide_context(v.clone());
                    let accent = v.portal.as_ref().and_then(|p| p.brand.accent.clone());
                    view! {
                        <div class="frame" style=accent.map(|a| format!("--accent:{a}"))>
                        // The first stop of Tab: past the navigation, to the page itself.
                        <a class="skip" href="#content" data-testid="skip-link" on:click=skip_to_content>"Skip to content"</a>
                        {match v.portal.clone() {
                            Some(portal) => view! { <PortalHeader portal project=v.current.clone().map(|p| p.name).unwrap_or_default()/> }.into_any(),
                            None => view! { <CabinetHeader viewer=v.clone()/> }.into_any(),
                        }}
                        {(!v.disabled_endpoints.is_empty()).then(|| view! {
                            <div class="banner" role="alert" data-testid="disabled-banner">
                                {v.disabled_endpoints.iter().map(|(id, url, reason)| view! {
                                    <p>"Endpoint "<a href="/developers/webhooks">{format!("#{id} {url}")}</a>" was disabled: "{reason.trim_start_matches("auto: ").to_string()}". Its queued events wait; enable it to resume."</p>
                                }).collect_view()}
                            </div>
                        })}
                        {
                            #[cfg(feature = "hydrate")]
                            if navigated {
                                request_animation_frame(focus_content);
                            }
                        }
                        <main class="cabinet" id="content" tabindex="-1">
                            <h1>{title.get_value()}</h1>
                            {children.read_value()()}
                        </main>
                        </div>
                    }.into_any()
                    }
                    Ok(None) => view! { <Redirect path="/login"/> }.into_any(),
                    Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                };
                view! { {gate.open()} {content} }
            })}
        </Suspense>
    }
}

/// The skip link moves the focus itself: the router would take the `#content` link as a
/// navigation and leave the focus where it was.
fn skip_to_content(ev: leptos::ev::MouseEvent) {
    ev.prevent_default();
    focus_content();
}

/// Focuses the page's `<main id="content">`.
fn focus_content() {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        if let Some(main) = document()
            .get_element_by_id("content")
            .and_then(|m| m.dyn_into::<web_sys::HtmlElement>().ok())
        {
            let _ = main.focus();
        }
    }
}

/// Renders its children for everyone who may act (`action`, when named): not for a
/// portal `viewer`, nor for support staff where they may not change anything, whose
/// server functions answer 403 anyway (the buttons would only lead to an error).
#[component]
pub fn CanAct(
    #[prop(optional)] action: Option<crate::core::permissions::Action>,
    children: Children,
) -> impl IntoView {
    let may = match action {
        Some(a) => may(a),
        None => use_context::<Viewer>().is_none_or(|v| !v.read_only()),
    };
    may.then(children)
}

/// Whether the signed-in person may take `action` here (the server decides again).
pub fn may(action: crate::core::permissions::Action) -> bool {
    use_context::<Viewer>().is_none_or(|v| v.may(action))
}

/// Renders its children outside the portal only (operations settings, alerts).
#[component]
pub fn NotInPortal(children: Children) -> impl IntoView {
    let outside = use_context::<Viewer>().is_none_or(|v| v.portal.is_none());
    outside.then(children)
}

/// The portal's header: the operator's brand instead of Posthorn's top bar, the three
/// pages a portal user has, who they are signed in as, and a sign-out. No switcher. The
/// sign-out is a plain form (no script), a POST under the same-origin check.
#[component]
fn PortalHeader(portal: PortalView, project: String) -> impl IntoView {
    let name = portal.brand.name.clone().unwrap_or(project);
    view! {
        <header class="portalbar" data-testid="portal-header">
            {portal.brand.logo_url.clone().map(|src| view! { <img class="logo" src=src alt="" height="24"/> })}
            <span class="brand-name" data-testid="portal-brand">{name}</span>
            <nav>
                <A href="/developers/deliveries">"Deliveries"</A>
                <A href="/developers/webhooks">"Webhooks"</A>
                <A href="/developers/events">"Events"</A>
            </nav>
            <span class="who">
                <span class="user" data-testid="portal-user">{portal.user.clone()}</span>
                <span class=format!("role role-{}", portal.role) data-testid="portal-role">{portal.role.clone()}</span>
                <form class="inline" method="post" action="/logout">
                    <button type="submit" class="link" data-testid="portal-sign-out">"Sign out"</button>
                </form>
            </span>
        </header>
    }
}

#[component]
fn CabinetHeader(viewer: Viewer) -> impl IntoView {
    let switch = ServerAction::<SwitchProject>::new();
    let logout = ServerAction::<Logout>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = switch.value().get() {
            let _ = window().location().reload();
        }
    });
    let current_id = viewer.current.as_ref().map(|p| p.id).unwrap_or_default();
    let current_name = viewer
        .current
        .as_ref()
        .map(|p| p.name.clone())
        .unwrap_or_else(|| "No project".into());
    let role = if viewer.is_support {
        "support"
    } else if viewer.member {
        "member"
    } else {
        "owner"
    };
    let keys = viewer.may(crate::core::permissions::Action::ReadKeys);
    // On a phone the navigation and the account fold behind "Menu" (CSS shows the button
    // below 800 px only), so the page's content starts near the top of the screen.
    let menu = RwSignal::new(false);
    view! {
        <header class="topbar folds" class:open=move || menu.get()>
            <a class="brand" href="/developers">"Posthorn"</a>
            <button type="button" class="menu-toggle" data-testid="menu-toggle" aria-controls="cabinet-menu"
                aria-expanded=move || menu.get().to_string() on:click=move |_| menu.update(|m| *m = !*m)>"Menu"</button>
            <nav id="cabinet-menu" aria-label="Pages">
                <A href="/developers/deliveries">"Deliveries"</A>
                <A href="/developers/webhooks">"Webhooks"</A>
                {keys.then(|| view! { <A href="/developers/keys">"API keys"</A> })}
                <A href="/developers/events">"Events"</A>
                <A href="/developers/team">"Team"</A>
                <A href="/developers/audit">"Audit"</A>
                <a href="/inspector">"Inspector"</a>
            </nav>
            <div class="who">
                <label class="switcher" title="Switch project">
                    <span class="sr-only">"Project"</span>
                    <select data-testid="project-switcher" aria-label="Project"
                        on:change=move |ev| {
                            if let Ok(id) = event_target_value(&ev).parse::<i64>() {
                                switch.dispatch(SwitchProject { project_id: ProjectId::new(id) });
                            }
                        }>
                        {viewer.projects.iter().map(|p| view! {
                            <option value=p.id.to_string() selected=p.id == current_id>{p.name.clone()}</option>
                        }).collect_view()}
                    </select>
                </label>
                <span class="project-name" data-testid="project-name">{current_name}</span>
                <span class="user" data-testid="user-email">{viewer.email.clone()}</span>
                <span class=format!("role role-{role}") data-testid="user-role">{role}</span>
                <form class="inline" method="post" action=Logout::url()
                    on:submit=move |ev| { ev.prevent_default(); logout.dispatch(Logout {}); }>
                    <button type="submit" class="link">"Sign out"</button>
                </form>
            </div>
        </header>
    }
}
