//! `/inspector` and `/inspector/{id}`: request bins. New requests appear without a reload;
//! a pasted secret verifies Posthorn signatures in the browser and is never sent anywhere.

use base64::{engine::general_purpose::STANDARD, Engine as _};
use chrono::Utc;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map};

use crate::{
    components::hydration::gate,
    components::widgets::{absolute, error_text, pretty, CopyButton, HeaderTable, Time},
    core::{curl::curl_bytes, signing},
    model::BinRequest,
    server_fns::inspector::{bin_requests, create_bin, get_bin_info, BinInfo},
};

/// The inspector's own bar, full width like the cabinet's, the same on both of its pages.
#[component]
fn InspectorHeader() -> impl IntoView {
    view! {
        <header class="topbar"><a class="brand" href="/">"Posthorn"</a>
            <nav aria-label="Pages"><a href="/inspector">"Inspector"</a><a href="/developers">"Cabinet"</a></nav>
        </header>
    }
}

#[component]
pub fn InspectorHome() -> impl IntoView {
    let create = Action::new(|_: &()| create_bin());
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(bin)) = create.value().get() {
            navigate(&format!("/inspector/{}", bin.id), Default::default());
        }
    });
    view! {
        <InspectorHeader/>
        <main class="narrow inspector">
            <h1>"Webhook inspector"</h1>
            <p>"A bin is a URL that records every request sent to it — any method, any path below it — so you can see exactly what arrives. Bins live 7 days."</p>
            <button type="button" class="primary" data-testid="create-bin-button" on:click=move |_| { create.dispatch(()); }
                disabled=move || create.pending().get()>"Create new URL"</button>
            {move || create.value().get().and_then(|r| r.err()).map(|e| view! { <p class="error">{error_text(&e)}</p> })}
        </main>
    }
}

#[component]
pub fn BinPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let info = Resource::new(id, get_bin_info);
    let initial = Resource::new(id, |id| bin_requests(id, None, None));
    let gate = gate();
    let list_gate = crate::components::hydration::gate();
    view! {
        <InspectorHeader/>
        <main class="inspector">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match info.await {
                        Ok(bin) => view! { <BinView bin initial gate=list_gate/> }.into_any(),
                        Err(e) => view! {
                            {list_gate.open()}
                            <h1>"Bin not found"</h1>
                            <p class="error">{error_text(&e)}" — it may have expired. "<a href="/inspector">"Create a new one"</a></p>
                        }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Suspense>
        </main>
    }
}

#[component]
fn BinView(
    bin: BinInfo,
    initial: Resource<Result<Vec<BinRequest>, ServerFnError>>,
    gate: crate::components::hydration::Gate,
) -> impl IntoView {
    let secret = RwSignal::new(String::new());
    let bin_id = bin.id.clone();
    view! {
        <h1>"Bin " <span class="mono">{bin.id.clone()}</span></h1>
        <p class="binurl">
            <code data-testid="bin-url">{bin.url.clone()}</code>" "<CopyButton text=bin.url.clone() what="bin URL"/>
            " · expires "<Time at=bin.expires_at/>
            " · JSON: "<a href=format!("/inspector/bins/{}/requests", bin.id)>"requests"</a>
        </p>
        <label class="secret">"Endpoint secret (checked here in your browser, never sent): "
            <input type="password" data-testid="secret-input" placeholder="whsec_…" autocomplete="off"
                prop:value=move || secret.get() on:input=move |ev| secret.set(event_target_value(&ev))/>
        </label>
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || {
                let bin_id = bin_id.clone();
                Suspend::new(async move {
                    let content = match initial.await {
                        Ok(list) => view! { <RequestList bin_id list secret/> }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })
            }}
        </Suspense>
    }
}

#[component]
fn RequestList(bin_id: String, list: Vec<BinRequest>, secret: RwSignal<String>) -> impl IntoView {
    let more = RwSignal::new(list.len() as i64 >= crate::server_fns::inspector::PAGE_SIZE);
    let items = RwSignal::new(list);
    let open = RwSignal::new(None::<i64>);
    let older = {
        let bin_id = bin_id.clone();
        Action::new(move |before: &i64| bin_requests(bin_id.clone(), None, Some(*before)))
    };
    Effect::new(move |_| {
        if let Some(Ok(page)) = older.value().get() {
            more.set(page.len() as i64 >= crate::server_fns::inspector::PAGE_SIZE);
            items.update(|v| v.extend(page));
        }
    });
    #[cfg(feature = "hydrate")]
    follow_bin(bin_id.clone(), items);
    let detail_bin = bin_id.clone();
    view! {
        <p class="muted" data-testid="request-count">{move || {
            let n = items.with(|v| v.len());
            format!("{n} request{} (newest first, live)", if n == 1 { "" } else { "s" })
        }}</p>
        <div class="requests">
            {move || items.get().into_iter().map(|r| view! { <RequestItem r bin_id=detail_bin.clone() open secret/> }).collect_view()}
        </div>
        {move || more.get().then(|| view! {
            <p><button type="button" data-testid="older-requests" disabled=move || older.pending().get()
                on:click=move |_| { if let Some(last) = items.with_untracked(|v| v.last().map(|r| r.id)) { older.dispatch(last); } }>
                "Load older requests"</button></p>
        })}
    }
}

/// New captures join the top of the list every second (the newest 500 are kept).
#[cfg(feature = "hydrate")]
fn follow_bin(bin_id: String, items: RwSignal<Vec<BinRequest>>) {
    use leptos::task::spawn_local;
    let busy = RwSignal::new(false);
    crate::components::widgets::every(std::time::Duration::from_millis(1000), move || {
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        let after = items.with_untracked(|v| v.first().map(|r| r.id));
        let bin_id = bin_id.clone();
        spawn_local(async move {
            if let Ok(mut fresh) = bin_requests(bin_id, after, None).await {
                if !fresh.is_empty() {
                    items.update(|v| {
                        fresh.append(v);
                        fresh.truncate(500);
                        *v = fresh;
                    });
                }
            }
            busy.set(false);
        });
    });
}

/// One capture's line, which opens to the capture.
#[component]
fn RequestItem(
    r: BinRequest,
    bin_id: String,
    open: RwSignal<Option<i64>>,
    secret: RwSignal<String>,
) -> impl IntoView {
    let id = r.id;
    let is_open = move || open.get() == Some(id);
    let toggle = move || open.update(|o| *o = if *o == Some(id) { None } else { Some(id) });
    let r2 = r.clone();
    view! {
        <div class="req" data-testid="bin-request" data-method=r.method.clone() class:open=is_open>
            <div class="reqline" tabindex="0" aria-expanded=move || is_open().to_string()
                on:click=move |_| toggle()
                on:keydown=move |ev| if crate::components::widgets::is_toggle_key(&ev) {
                    toggle();
                }>
                <span class="method">{r.method.clone()}</span>
                <span class="mono ellipsis">{r.path.clone()}{(!r.query.is_empty()).then(|| format!("?{}", r.query))}</span>
                <span class=if r.status == 200 { "code ok" } else { "code bad" }>{r.status}</span>
                <span class="num">{format!("{} B", r.size)}</span>
                <span class="muted">{r.remote_addr.clone().unwrap_or_default()}</span>
                <Time at=r.received_at/>
            </div>
            {move || is_open().then(|| view! { <RequestDetail bin_id=bin_id.clone() r=r2.clone() secret/> })}
        </div>
    }
}

fn header<'a>(r: &'a BinRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A capture opened: in full, or first its body, when the list left it out.
#[component]
fn RequestDetail(bin_id: String, r: BinRequest, secret: RwSignal<String>) -> impl IntoView {
    if !r.truncated {
        return view! { <FullRequest r secret/> }.into_any();
    }
    let (id, size) = (r.id, r.size);
    let load = Action::new(move |_: &()| {
        crate::server_fns::inspector::bin_request_body(bin_id.clone(), id)
    });
    view! {
        {move || match load.value().get() {
            Some(Ok(body)) => {
                let full = BinRequest { body, truncated: false, ..r.clone() };
                view! { <FullRequest r=full secret/> }.into_any()
            }
            Some(Err(e)) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
            None => view! {
                <div class="reqdetail" data-testid="bin-request-detail">
                    <p>{format!("The body ({size} bytes) is not loaded with the list. ")}
                        <button type="button" data-testid="load-body" disabled=move || load.pending().get()
                            on:click=move |_| { load.dispatch(()); }>"Load body"</button></p>
                </div>
            }.into_any(),
        }}
    }
    .into_any()
}

#[component]
fn FullRequest(r: BinRequest, secret: RwSignal<String>) -> impl IntoView {
    let curl = curl_bytes(&r.method, &request_url(&r), &r.headers, &r.body);
    let body_view = body_text(&r);
    let signature = Signature {
        ts: header(&r, "x-botix-timestamp")
            .or(header(&r, "webhook-timestamp"))
            .and_then(|t| t.parse::<i64>().ok()),
        msg_id: header(&r, "webhook-id")
            .or(header(&r, "x-event-id"))
            .unwrap_or_default()
            .to_string(),
        botix: header(&r, "x-botix-signature").map(str::to_string),
        standard: header(&r, "webhook-signature").map(str::to_string),
        body: r.body.clone(),
    };
    let signed = signature.botix.is_some() || signature.standard.is_some();
    view! {
        <div class="reqdetail" data-testid="bin-request-detail">
            <p><CopyButton text=curl.clone() what="the request" label="Copy as curl"/></p>
            {signed.then(|| view! { <SignatureCheck signature secret/> })}
            <h3>"Headers"</h3>
            <HeaderTable headers=r.headers.clone()/>
            <h3>"Body"</h3>
            <pre class="code" data-testid="bin-request-body">{body_view}</pre>
        </div>
    }
}

/// The URL the capture was sent to, as its Host header says.
fn request_url(r: &BinRequest) -> String {
    let host = header(r, "host").unwrap_or("127.0.0.1:3000");
    let query = if r.query.is_empty() {
        String::new()
    } else {
        format!("?{}", r.query)
    };
    format!("http://{host}{}{query}", r.path)
}

/// The body as shown: pretty text, base64 when binary, or when it was erased.
fn body_text(r: &BinRequest) -> String {
    match std::str::from_utf8(&r.body) {
        _ if r.erased_at.is_some() => format!(
            "(erased on {} with its event's data)",
            r.erased_at.map(absolute).unwrap_or_default()
        ),
        Ok(text) => pretty(text),
        Err(_) => format!(
            "(binary, {} bytes, base64)\n{}",
            r.body.len(),
            STANDARD.encode(&r.body)
        ),
    }
}

/// What a capture's signatures are checked with.
struct Signature {
    ts: Option<i64>,
    msg_id: String,
    botix: Option<String>,
    standard: Option<String>,
    body: Vec<u8>,
}

/// The timestamp's freshness, and both signatures checked with the secret typed above
/// (in the browser; it is never sent).
#[component]
fn SignatureCheck(signature: Signature, secret: RwSignal<String>) -> impl IntoView {
    let ts = signature.ts;
    let check = move || {
        let s = secret.get();
        let ts = ts?;
        if s.trim().is_empty() {
            return None;
        }
        Some(signing::verify(
            s.trim(),
            &signature.msg_id,
            ts,
            &signature.body,
            signature.botix.as_deref(),
            signature.standard.as_deref(),
        ))
    };
    let verdict = |v: Option<bool>| match v {
        Some(true) => "valid",
        Some(false) => "INVALID",
        None => "absent",
    };
    view! {
        <div class="sigcheck" data-testid="signature-check">
            {ts.map(|t| {
                let age = Utc::now().timestamp() - t;
                let fresh = signing::timestamp_is_fresh(t, Utc::now().timestamp());
                view! { <p data-testid="timestamp-fresh" data-fresh=fresh.to_string()>{format!("Timestamp {t}: {} ({age}s old)", if fresh { "fresh" } else { "stale" })}</p> }
            })}
            {move || match check() {
                Some(c) => view! {
                    <p data-testid="signature-result" data-valid=(c.botix != Some(false) && c.standard != Some(false)).to_string()>
                        {format!("X-Botix-Signature: {} · webhook-signature: {}", verdict(c.botix), verdict(c.standard))}
                    </p>
                }.into_any(),
                None => view! { <p class="muted">"Paste the endpoint secret above to verify the signature."</p> }.into_any(),
            }}
        </div>
    }
}
