//! `/alerts/confirm/{token}`: the page a confirmation link opens. It asks for a press of
//! Confirm rather than confirming on load, so a mail scanner that follows links does not
//! confirm an address for its owner.

use leptos::{prelude::*, server_fn::ServerFn};

use crate::components::{hydration::gate, widgets::error_text};

#[component]
pub fn ConfirmAlertAddressPage() -> impl IntoView {
    use crate::server_fns::alerts::{alert_address_to_confirm, ConfirmAlertAddress};
    use leptos_router::hooks::use_params_map;
    let params = use_params_map();
    let token = move || params.read().get("token").unwrap_or_default();
    let address = Resource::new(token, alert_address_to_confirm);
    let gate = gate();
    let confirm = ServerAction::<ConfirmAlertAddress>::new();
    view! {
        <main class="login">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match address.await {
                        Ok(a) => view! {
                            <h1>"Confirm alert e-mail"</h1>
                            <p>{format!("Mail the alerts of {} to {}?", a.project, a.email)}</p>
                            {move || match confirm.value().get() {
                                Some(Ok(email)) => view! { <p class="note ok" role="status" data-testid="alert-address-confirmed">{format!("Confirmed: {email} gets the alerts from now on.")}</p> }.into_any(),
                                other => view! {
                                    <form method="post" action=ConfirmAlertAddress::url()
                                        on:submit=move |ev| { ev.prevent_default(); confirm.dispatch(ConfirmAlertAddress { token: token() }); }>
                                        <input type="hidden" name="token" value=token()/>
                                        <button type="submit" data-testid="confirm-alert-address-button">"Confirm"</button>
                                        {other.and_then(|r| r.err()).map(|e| view! { <p class="error" role="alert">{error_text(&e)}</p> })}
                                    </form>
                                }.into_any(),
                            }}
                        }.into_any(),
                        Err(e) => view! { <h1>"Confirm alert e-mail"</h1><p class="error" role="alert" data-testid="alert-confirm-error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Suspense>
        </main>
    }
}
