//! ed25519 endpoints through the public API: the public key shown, no secret, deliveries
//! signed `v1a` only, verified by an independent implementation (Python's
//! `cryptography`) over the Standard Webhooks content, a tampered one refused; and a
//! switch back to HMAC signing with both schemes for the window.

use crate::common;

use std::time::Duration;

use app::core::signing::standard_signature;
use common::{header, Received, Receiver, TestApp};
use serde_json::json;

/// Whether Python's `cryptography` accepts `signature` (the `webhook-signature` header)
/// for (id, timestamp, body) under the `whpk_` key: the first `v1a` entry that verifies.
fn python_verifies(public_key: &str, id: &str, ts: &str, body: &[u8], signature: &str) -> bool {
    let python = std::env::var("POSTHORN_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = r#"
import sys, base64
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.exceptions import InvalidSignature
key, msg_id, ts, header = sys.argv[1:5]
body = sys.stdin.buffer.read()
public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key.removeprefix("whpk_")))
content = msg_id.encode() + b"." + ts.encode() + b"." + body
for entry in header.split(" "):
    version, _, sig = entry.partition(",")
    if version != "v1a":
        continue
    try:
        public.verify(base64.b64decode(sig), content)
        print("verified")
        sys.exit(0)
    except InvalidSignature:
        pass
sys.exit(1)
"#;
    let mut child = std::process::Command::new(&python)
        .args(["-c", script, public_key, id, ts, signature])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python with cryptography (set POSTHORN_PYTHON)");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(body).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("Error") || !out.status.success(),
        "{stderr}"
    );
    assert!(!stderr.contains("ModuleNotFoundError"), "{stderr}");
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains("verified")
}

/// Whether a delivery as received verifies with `public_key`.
fn delivery_verifies(public_key: &str, got: &Received) -> bool {
    let (msg_id, ts, signature) = parts(got);
    python_verifies(public_key, &msg_id, &ts, &got.body, &signature)
}

fn parts(r: &Received) -> (String, String, String) {
    (
        header(r, "webhook-id").to_string(),
        header(r, "webhook-timestamp").to_string(),
        header(r, "webhook-signature").to_string(),
    )
}

async fn patch(
    app: &TestApp,
    key: &str,
    id: i64,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    app.api(
        key,
        reqwest::Method::PATCH,
        &format!("/webhooks/{id}"),
        body,
    )
    .await
}

/// A new ed25519 endpoint for `events`, as the API answered.
async fn ed25519_endpoint(app: &TestApp, key: &str, url: &str, events: &str) -> serde_json::Value {
    let body = json!({"url": url, "events": [events], "signature_scheme": "ed25519"});
    let (status, ep) = app.api(key, reqwest::Method::POST, "/webhooks", body).await;
    assert_eq!(status, 201, "{ep}");
    ep
}

async fn send_event(app: &TestApp, key: &str, n: i64) {
    let (status, body) = app
        .api(
            key,
            reqwest::Method::POST,
            "/events",
            json!({"event": "order.paid", "data": {"n": n}}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
}

#[tokio::test]
async fn an_ed25519_endpoint_signs_v1a_only_and_an_independent_implementation_verifies_it() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let (_, key) = app.project("business").await;
    let ep = ed25519_endpoint(&app, &key, &rx.url, "*").await;
    assert_eq!(ep["signature_scheme"], "ed25519");
    assert!(ep.get("secret").is_none(), "no secret: {ep}");
    let public_key = ep["public_key"].as_str().unwrap().to_string();
    assert!(public_key.starts_with("whpk_"), "{ep}");
    let id = ep["id"].as_i64().unwrap();

    send_event(&app, &key, 1).await;
    let seen = rx.wait_for(1, Duration::from_secs(15)).await;
    let got = &seen[0];
    let (msg_id, ts, signature) = parts(got);
    assert!(
        signature.starts_with("v1a,") && !signature.contains(' '),
        "{signature}"
    );
    assert!(
        got.headers.get("x-botix-signature").is_none(),
        "no HMAC signature"
    );
    assert!(delivery_verifies(&public_key, got));
    // Tampered: the body, the id, the timestamp; or another endpoint's key.
    let mut body = got.body.to_vec();
    body[2] ^= 1;
    assert!(!python_verifies(
        &public_key,
        &msg_id,
        &ts,
        &body,
        &signature
    ));
    assert!(!python_verifies(
        &public_key,
        "evt_other",
        &ts,
        &got.body,
        &signature
    ));
    assert!(!python_verifies(
        &public_key,
        &msg_id,
        "1700000000",
        &got.body,
        &signature
    ));
    let other = ed25519_endpoint(&app, &key, &rx.url, "none.such").await;
    let other_key = other["public_key"].as_str().unwrap();
    assert_ne!(other_key, public_key);
    assert!(!python_verifies(
        other_key, &msg_id, &ts, &got.body, &signature
    ));

    // It has no secret to rotate.
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::POST,
            &format!("/webhooks/{id}/rotate-secret"),
            json!({}),
        )
        .await;
    assert_eq!(status, 409, "{body}");

    // Back to HMAC: a new secret, shown once; for a day both schemes sign.
    let (status, back) = patch(&app, &key, id, json!({"signature_scheme": "hmac-sha256"})).await;
    assert_eq!(status, 200, "{back}");
    let secret = back["secret"].as_str().unwrap().to_string();
    assert_eq!(
        back["public_key"],
        public_key.as_str(),
        "the key pair is kept"
    );
    send_event(&app, &key, 2).await;
    let seen = rx.wait_for(2, Duration::from_secs(15)).await;
    let got = &seen[1];
    let (msg_id, ts, signature) = parts(got);
    let hmac = standard_signature(&secret, &msg_id, ts.parse().unwrap(), &got.body);
    assert!(signature.split(' ').any(|s| s == hmac), "{signature}");
    assert!(delivery_verifies(&public_key, got));
    assert!(got.headers.get("x-botix-signature").is_some());

    // A bad scheme is refused.
    let (status, body) = patch(&app, &key, id, json!({"signature_scheme": "rsa"})).await;
    assert_eq!(status, 422, "{body}");
    app.stop().await;
}
