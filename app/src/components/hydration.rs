//! `data-hydrated="true"` on `<body>` once the page is interactive: after the first
//! hydration pass and after every Suspense boundary present at load has hydrated its
//! content, so a test that waits for the mark can click anything on the page.

use leptos::prelude::*;

#[derive(Clone, Copy)]
pub struct Hydration(RwSignal<i32>);

pub fn provide_hydration_mark() {
    let pending = RwSignal::new(0);
    provide_context(Hydration(pending));
    Effect::new(move |_| {
        if pending.get() <= 0 {
            if let Some(body) = document().body() {
                let _ = body.set_attribute("data-hydrated", "true");
            }
        }
    });
}

/// One Suspense boundary whose content the mark waits for.
#[derive(Clone, Copy)]
pub struct Gate {
    done: StoredValue<bool>,
}

/// Call in the component that owns the boundary (runs on the server and in the browser).
pub fn gate() -> Gate {
    if let Some(h) = use_context::<Hydration>() {
        h.0.update_untracked(|n| *n += 1);
    }
    Gate {
        done: StoredValue::new(false),
    }
}

impl Gate {
    /// Place inside the boundary's resolved content, in every branch.
    pub fn open(self) -> impl IntoView {
        Effect::new(move |_| {
            if !self.done.get_value() {
                self.done.set_value(true);
                if let Some(h) = use_context::<Hydration>() {
                    h.0.update(|n| *n -= 1);
                }
            }
        });
    }
}
