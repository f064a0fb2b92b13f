//! "Try on recent events" answered in place. The card's filter form is server-built HTML
//! that works without the bundle (its try button posts and the page comes back with the
//! result); with the bundle, a click on that button asks the server for the result alone
//! and puts it under the form: no page load, the typed text and the page's scroll stay.

use crate::core::EndpointId;

/// The click handler of the card's server-built block: acts on the try button only.
pub fn on_click(ev: leptos::ev::MouseEvent, id: EndpointId) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let Some(button) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|el| el.closest("[data-testid=try-filter-button]").ok().flatten())
        else {
            return;
        };
        let Some(form) = button.closest("form").ok().flatten() else {
            return;
        };
        let text = form
            .query_selector("textarea[name=filter]")
            .ok()
            .flatten()
            .and_then(|t| t.dyn_into::<web_sys::HtmlTextAreaElement>().ok())
            .map(|t| t.value())
            .unwrap_or_default();
        ev.prevent_default();
        leptos::task::spawn_local(async move {
            let answer = crate::server_fns::filters::try_endpoint_filter_here(id, text).await;
            // The previous result, from the page or an earlier try, gives way.
            if let Some(parent) = form.parent_element() {
                if let Ok(Some(old)) = parent.query_selector(".epfilter-try") {
                    old.remove();
                }
            }
            match answer {
                Ok(html) => {
                    let _ = form.insert_adjacent_html("afterend", &html);
                }
                Err(e) => {
                    let note = leptos::prelude::document().create_element("div").ok();
                    if let Some(note) = note {
                        note.set_class_name("epfilter-try error");
                        note.set_attribute("role", "alert").ok();
                        note.set_text_content(Some(&crate::components::widgets::error_text(&e)));
                        let _ = form.after_with_node_1(&note);
                    }
                }
            }
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (ev, id);
}
