//! Destructive actions ask first: the button opens an in-page dialog that names what
//! will happen, and nothing changes until its confirm button is pressed. Cancel (or
//! Escape) closes it; the focus goes to Cancel when it opens, so Enter alone does not
//! destroy anything. Tab stays within the dialog's two buttons, and the focus returns to
//! the opening button when it closes without acting.

use leptos::{html, prelude::*};

#[component]
pub fn ConfirmButton(
    /// The button's text.
    #[prop(into)]
    label: String,
    /// The dialog's heading ("Delete endpoint #3?").
    #[prop(into)]
    title: String,
    /// What happens, in a sentence or two.
    #[prop(into)]
    what: String,
    /// The confirm button's text ("Delete").
    #[prop(into)]
    confirm: String,
    /// The opening button's `data-testid`.
    #[prop(optional, into)]
    testid: String,
    #[prop(optional, into)] class: String,
    /// While the action runs the button is disabled (no second request).
    #[prop(into)]
    pending: Signal<bool>,
    on_confirm: impl Fn() + Send + Sync + 'static,
) -> impl IntoView {
    // One body for every use: the generic part ends here (the bundle carries one copy).
    let texts = [label, title, what, confirm, testid, class];
    confirm_button(texts, pending, std::sync::Arc::new(on_confirm))
}

fn confirm_button(
    [label, title, what, confirm, testid, class]: [String; 6],
    pending: Signal<bool>,
    on_confirm: std::sync::Arc<dyn Fn() + Send + Sync>,
) -> AnyView {
    let open = RwSignal::new(false);
    let (opener, confirm_ref, cancel_ref) = (
        NodeRef::<html::Button>::new(),
        NodeRef::<html::Button>::new(),
        NodeRef::<html::Button>::new(),
    );
    Effect::new(move |_| {
        if open.get() {
            if let Some(b) = cancel_ref.get() {
                let _ = b.focus();
            }
        }
    });
    let close = move || {
        open.set(false);
        if let Some(b) = opener.get_untracked() {
            let _ = b.focus();
        }
    };
    // Which of the two buttons has the focus: Tab and Shift+Tab go to the other one.
    let on_cancel = StoredValue::new(true);
    let title_id = format!("confirm-{}", testid);
    view! {
        <button type="button" class=class data-testid=testid aria-haspopup="dialog" node_ref=opener
            disabled=move || pending.get() on:click=move |_| open.set(true)>{label}</button>
        {move || open.get().then(|| {
            let on_confirm = on_confirm.clone();
            view! {
                <div class="dialog" role="dialog" aria-modal="true" aria-labelledby=title_id.clone()
                    data-testid="confirm-dialog"
                    on:keydown=move |ev| match ev.key().as_str() {
                        "Escape" => close(),
                        "Tab" => {
                            ev.prevent_default();
                            let to = if on_cancel.get_value() { confirm_ref } else { cancel_ref };
                            if let Some(b) = to.get_untracked() {
                                let _ = b.focus();
                            }
                        }
                        _ => {}
                    }>
                    <h2 id=title_id.clone()>{title.clone()}</h2>
                    <p>{what.clone()}</p>
                    <div class="dialog-actions">
                        <button type="button" class="danger" data-testid="confirm-action" node_ref=confirm_ref
                            on:focus=move |_| on_cancel.set_value(false)
                            on:click=move |_| { open.set(false); on_confirm(); }>{confirm.clone()}</button>
                        <button type="button" data-testid="cancel-action" node_ref=cancel_ref
                            on:focus=move |_| on_cancel.set_value(true)
                            on:click=move |_| close()>"Cancel"</button>
                    </div>
                </div>
            }
        })}
    }
    .into_any()
}
