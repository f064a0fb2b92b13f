//! Secrets at rest with real `posthorn serve` processes: values written before a key was
//! set are sealed when a keyed process starts, deliveries still carry the right
//! signature and custom header, a process given another key refuses to start, and
//! `posthorn rotate-encryption-key` moves everything to a new key.

mod common;

use std::{
    process::{Child, Command, Stdio},
    time::Duration,
};

use app::core::signing::standard_signature;
use common::{
    header,
    process::{free_port, started},
    Receiver, TestDb,
};

const KEY_A: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const KEY_B: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";

fn posthorn(db_url: &str, key: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_posthorn"));
    cmd.env("DATABASE_URL", db_url)
        .env("POSTHORN_ALLOW_PRIVATE_TARGETS", "true")
        .env("POSTHORN_LEASE", "2s")
        .env("RUST_LOG", "warn")
        .env_remove("POSTHORN_ENCRYPTION_KEY");
    if let Some(key) = key {
        cmd.env("POSTHORN_ENCRYPTION_KEY", key);
    }
    cmd
}

struct Serving {
    child: Child,
    base: String,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn serve(db_url: &str, key: Option<&str>) -> Serving {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut cmd = posthorn(db_url, key);
    cmd.arg("serve")
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = started(&mut cmd, &base).await;
    Serving { child, base }
}

/// What a process that must not start says, and that it stopped.
fn refused(db_url: &str, key: Option<&str>) -> String {
    let out = posthorn(db_url, key).arg("dispatch").output().unwrap();
    assert!(!out.status.success(), "it started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

async fn api(base: &str, key: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let resp = reqwest::Client::new()
        .post(format!("{base}/public/v1{path}"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{path}: {}", resp.status());
    resp.json().await.unwrap()
}

/// The endpoint's row as stored, all of it as text.
async fn stored(pool: &sqlx::PgPool, id: i64) -> String {
    sqlx::query_scalar("SELECT to_jsonb(e)::text FROM endpoints e WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Sends one event and checks the request the receiver got: signed with `secrets` (one
/// signature each), carrying the custom header.
async fn delivers(base: &str, key: &str, rx: &Receiver, n: usize, secrets: &[&str]) {
    api(
        base,
        key,
        "/events",
        serde_json::json!({"event": "order.paid", "data": {"n": n}}),
    )
    .await;
    let seen = rx.wait_for(n, Duration::from_secs(20)).await;
    assert_eq!(seen.len(), n, "delivered");
    let got = &seen[n - 1];
    assert_eq!(header(got, "authorization"), "Bearer tok-sealed-123");
    let id = header(got, "webhook-id");
    let ts: i64 = header(got, "webhook-timestamp").parse().unwrap();
    let expected: Vec<String> = secrets
        .iter()
        .map(|s| standard_signature(s, id, ts, &got.body))
        .collect();
    assert_eq!(header(got, "webhook-signature"), expected.join(" "));
}

#[tokio::test]
async fn secrets_are_sealed_at_rest_shared_by_key_and_rotated_to_a_new_one() {
    let db = TestDb::new().await;
    let owner = app::db::users::upsert(&db.pool, "sealed@example.com", "password-123", "user")
        .await
        .unwrap();
    let project = app::db::projects::create(&db.pool, "Sealed", "business", owner.id)
        .await
        .unwrap();
    let (key, _) = app::db::api_keys::create(&db.pool, project.id, "t")
        .await
        .unwrap();
    let rx = Receiver::start().await;

    // Written without a key: in plain text. (The receiver is plain HTTP: the client
    // certificate's key is opened for every delivery but not presented.)
    let cert_key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["client.example".to_string()])
        .unwrap()
        .self_signed(&cert_key)
        .unwrap();
    let plain = serve(&db.url, None).await;
    let ep = api(
        &plain.base,
        &key,
        "/webhooks",
        serde_json::json!({"url": rx.url, "events": ["*"],
            "headers": {"Authorization": "Bearer tok-sealed-123"},
            "client_certificate": {"cert": cert.pem(), "key": cert_key.serialize_pem()}}),
    )
    .await;
    let (id, secret) = (
        ep["id"].as_i64().unwrap(),
        ep["secret"].as_str().unwrap().to_string(),
    );
    assert!(stored(&db.pool, id).await.contains(&secret));
    assert!(stored(&db.pool, id).await.contains("PRIVATE KEY"));
    delivers(&plain.base, &key, &rx, 1, &[&secret]).await;
    drop(plain);

    // A process with a key seals what was plain before it serves.
    let keyed = serve(&db.url, Some(KEY_A)).await;
    let row = stored(&db.pool, id).await;
    assert!(
        !row.contains(&secret) && !row.contains("tok-sealed-123"),
        "{row}"
    );
    assert!(row.contains("ph1:"), "{row}");
    delivers(&keyed.base, &key, &rx, 2, &[&secret]).await;
    // A rotated secret is sealed too, and the old one still signs beside it.
    let rotated = api(
        &keyed.base,
        &key,
        &format!("/webhooks/{id}/rotate-secret"),
        serde_json::json!({}),
    )
    .await;
    let new_secret = rotated["secret"].as_str().unwrap().to_string();
    let row = stored(&db.pool, id).await;
    assert!(
        !row.contains(&new_secret) && !row.contains(&secret),
        "{row}"
    );
    delivers(&keyed.base, &key, &rx, 3, &[&new_secret, &secret]).await;
    drop(keyed);

    // Another key, or none, cannot open them: the process says which key it lacks.
    let id_a = app::core::sealed::Keyring::parse(KEY_A)
        .unwrap()
        .current_id()
        .to_string();
    let said = refused(&db.url, Some(KEY_B));
    assert!(said.contains(&format!("sealed with key {id_a}")), "{said}");
    assert!(refused(&db.url, None).contains("POSTHORN_ENCRYPTION_KEY"));

    // Rotation: the new key first, the old one after it; then the old one can go.
    let out = posthorn(&db.url, Some(&format!("{KEY_B},{KEY_A}")))
        .arg("rotate-encryption-key")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["values"], 4,
        "secret, previous secret, header and client key: {report}"
    );
    assert_eq!(report["under_other_keys"], 0, "{report}");
    assert!(refused(&db.url, Some(KEY_A)).contains("sealed with key"));
    let rotated_key = serve(&db.url, Some(KEY_B)).await;
    delivers(&rotated_key.base, &key, &rx, 4, &[&new_secret, &secret]).await;
}
