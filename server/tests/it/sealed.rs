//! Secrets at rest with real `posthorn serve` processes: values written before a key was
//! set are sealed when a keyed process starts, deliveries still carry the right
//! signature and custom header, a process given another key refuses to start, and
//! `posthorn rotate-encryption-key` moves everything to a new key.

use crate::common;
use app::core::{EndpointId, ProjectId};

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

/// What a process that must not start says, and that it stopped (one still running
/// after 15 s started: it is stopped, and the test fails).
fn refused(db_url: &str, key: Option<&str>) -> String {
    let mut child = posthorn(db_url, key)
        .arg("dispatch")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("it started");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
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
    assert!(row.contains("ph2:") && !row.contains("ph1:"), "{row}");
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
    assert_eq!(report["unbound"], 0, "{report}");
    assert!(refused(&db.url, Some(KEY_A)).contains("sealed with key"));
    let rotated_key = serve(&db.url, Some(KEY_B)).await;
    delivers(&rotated_key.base, &key, &rx, 4, &[&new_secret, &secret]).await;
}

/// A project and its API key, made in the database: (id, key).
async fn project(pool: &sqlx::PgPool, name: &str) -> (i64, String) {
    let email = format!(
        "{}@example.com",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let owner = app::db::users::upsert(pool, &email, "password-123", "user")
        .await
        .unwrap();
    let project = app::db::projects::create(pool, name, "business", owner.id)
        .await
        .unwrap();
    let (key, _) = app::db::api_keys::create(pool, project.id, "t")
        .await
        .unwrap();
    (project.id.get(), key)
}

/// An endpoint to `url` through the API, with the custom header `delivers` expects:
/// (id, secret).
async fn webhook(base: &str, key: &str, url: &str) -> (i64, String) {
    let ep = api(
        base,
        key,
        "/webhooks",
        serde_json::json!({"url": url, "events": ["*"],
            "headers": {"Authorization": "Bearer tok-sealed-123"}}),
    )
    .await;
    let secret = ep["secret"].as_str().unwrap().to_string();
    (ep["id"].as_i64().unwrap(), secret)
}

async fn send(base: &str, key: &str) {
    api(
        base,
        key,
        "/events",
        serde_json::json!({"event": "order.paid", "data": {}}),
    )
    .await;
}

/// Requests `rx` got that carry a signature made with `secret`.
fn signed_with(rx: &Receiver, secret: &str) -> usize {
    rx.seen()
        .iter()
        .filter(|r| {
            let id = header(r, "webhook-id");
            let ts: i64 = header(r, "webhook-timestamp").parse().unwrap_or(0);
            let expected = standard_signature(secret, id, ts, &r.body);
            header(r, "webhook-signature")
                .split(' ')
                .any(|s| s == expected)
        })
        .count()
}

/// Waits until each endpoint has a finished attempt: (endpoint, status, error) of each.
async fn finished(pool: &sqlx::PgPool, endpoints: &[i64]) -> Vec<(i64, String, Option<String>)> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let rows: Vec<(i64, String, Option<String>)> = sqlx::query_as(
            "SELECT DISTINCT ON (endpoint_id) endpoint_id, status, error FROM delivery_log
              WHERE endpoint_id = ANY($1) ORDER BY endpoint_id, id",
        )
        .bind(endpoints)
        .fetch_all(pool)
        .await
        .unwrap();
        if rows.len() == endpoints.len() {
            return rows;
        }
        assert!(std::time::Instant::now() < deadline, "no attempt: {rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_sealed_value_moved_to_another_endpoint_or_project_does_not_open() {
    let db = TestDb::new().await;
    let (victim, victim_key) = project(&db.pool, "Victim").await;
    let (other, other_key) = project(&db.pool, "Other").await;
    let (rx, rx_beside, rx_other) = (
        Receiver::start().await,
        Receiver::start().await,
        Receiver::start().await,
    );
    let keyed = serve(&db.url, Some(KEY_A)).await;
    let (id, secret) = webhook(&keyed.base, &victim_key, &rx.url).await;
    let (beside, _) = webhook(&keyed.base, &victim_key, &rx_beside.url).await;
    let (theirs, _) = webhook(&keyed.base, &other_key, &rx_other.url).await;
    let _ = victim;

    // The victim's sealed secret, copied by SQL into another endpoint of its project and
    // into another project's endpoint.
    sqlx::query(
        "UPDATE endpoints SET secret = (SELECT secret FROM endpoints WHERE id = $1) WHERE id = ANY($2)",
    )
    .bind(id)
    .bind(vec![beside, theirs])
    .execute(&db.pool)
    .await
    .unwrap();
    app::core::sealed::install(Some(app::core::sealed::Keyring::parse(KEY_A).unwrap()));
    let revealed = app::db::endpoints::secrets(
        &db.pool,
        &app::auth::system_access(ProjectId::new(other), "t"),
        EndpointId::new(theirs),
    )
    .await;
    assert!(
        revealed.is_err(),
        "the other project reads the victim's secret: {revealed:?}"
    );

    send(&keyed.base, &victim_key).await;
    send(&keyed.base, &other_key).await;
    delivers(&keyed.base, &victim_key, &rx, 2, &[&secret]).await;
    let attempts = finished(&db.pool, &[beside, theirs]).await;
    assert_eq!(signed_with(&rx_beside, &secret), 0, "{attempts:?}");
    assert_eq!(signed_with(&rx_other, &secret), 0, "{attempts:?}");
    for (_, status, error) in &attempts {
        assert_eq!(status, "failed", "{attempts:?}");
        assert!(
            error.as_deref().unwrap_or("").contains("does not open"),
            "{attempts:?}"
        );
    }
}

#[tokio::test]
async fn a_plain_value_written_beside_sealed_ones_is_refused() {
    let db = TestDb::new().await;
    let (_, key) = project(&db.pool, "Planted").await;
    let (rx_secret, rx_header) = (Receiver::start().await, Receiver::start().await);
    let keyed = serve(&db.url, Some(KEY_A)).await;
    let (by_secret, _) = webhook(&keyed.base, &key, &rx_secret.url).await;
    let (by_header, _) = webhook(&keyed.base, &key, &rx_header.url).await;
    sqlx::query("UPDATE endpoints SET secret = 'whsec_planted' WHERE id = $1")
        .bind(by_secret)
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query(
        r#"UPDATE endpoints SET custom_headers = '[["Authorization", "Bearer planted"]]' WHERE id = $1"#,
    )
    .bind(by_header)
    .execute(&db.pool)
    .await
    .unwrap();

    send(&keyed.base, &key).await;
    let attempts = finished(&db.pool, &[by_secret, by_header]).await;
    assert_eq!(signed_with(&rx_secret, "whsec_planted"), 0, "{attempts:?}");
    let planted = rx_header
        .seen()
        .iter()
        .filter(|r| header(r, "authorization") == "Bearer planted")
        .count();
    assert_eq!(planted, 0, "{attempts:?}");
    for (_, status, error) in &attempts {
        assert_eq!(status, "failed", "{attempts:?}");
        assert!(
            error.as_deref().unwrap_or("").contains("plain text"),
            "{attempts:?}"
        );
    }
    // A restart does not take them in as if they were written before any key was set.
    drop(keyed);
    let _keyed = serve(&db.url, Some(KEY_A)).await;
    assert!(stored(&db.pool, by_secret).await.contains("whsec_planted"));
    assert!(stored(&db.pool, by_header).await.contains("Bearer planted"));
}

#[tokio::test]
async fn a_keyless_process_refuses_a_database_a_key_was_used_on() {
    let db = TestDb::new().await;
    // A keyed process ran; nothing was sealed yet.
    drop(serve(&db.url, Some(KEY_A)).await);
    let said = refused(&db.url, None);
    assert!(said.contains("POSTHORN_ENCRYPTION_KEY"), "{said}");
}

#[tokio::test]
async fn a_database_that_never_had_a_key_keeps_working_without_one() {
    let db = TestDb::new().await;
    let (_, key) = project(&db.pool, "Local").await;
    let rx = Receiver::start().await;
    let plain = serve(&db.url, None).await;
    let (id, secret) = webhook(&plain.base, &key, &rx.url).await;
    delivers(&plain.base, &key, &rx, 1, &[&secret]).await;
    drop(plain);
    let plain = serve(&db.url, None).await;
    delivers(&plain.base, &key, &rx, 2, &[&secret]).await;
    assert!(stored(&db.pool, id).await.contains(&secret));
}

/// `whsec_legacy0123456789` as the earlier format sealed it with `KEY_A` for an endpoint
/// secret (`ph1:`, bound to its purpose only).
const LEGACY: &str =
    "ph1:3eb1bd43:AAECAwQFBgcICQoLj1cnXQQck87wc5ryBblj9QT7ZEUJHdBLo9mrhsXnfVO54MXe+dA=";

#[tokio::test]
async fn values_sealed_before_are_bound_to_their_endpoint_when_a_keyed_process_starts() {
    let db = TestDb::new().await;
    let (_, key) = project(&db.pool, "Upgraded").await;
    let (rx, rx_copy) = (Receiver::start().await, Receiver::start().await);
    let plain = serve(&db.url, None).await;
    let (id, _) = webhook(&plain.base, &key, &rx.url).await;
    drop(plain);
    // As an earlier version left it: sealed, bound to no endpoint.
    sqlx::query("UPDATE endpoints SET secret = $2 WHERE id = $1")
        .bind(id)
        .bind(LEGACY)
        .execute(&db.pool)
        .await
        .unwrap();

    let keyed = serve(&db.url, Some(KEY_A)).await;
    let row = stored(&db.pool, id).await;
    assert!(row.contains("ph2:") && !row.contains("ph1:"), "{row}");
    delivers(&keyed.base, &key, &rx, 1, &["whsec_legacy0123456789"]).await;

    // Once every value is bound, the earlier format opens nowhere.
    let (copy, _) = webhook(&keyed.base, &key, &rx_copy.url).await;
    sqlx::query("UPDATE endpoints SET secret = $2 WHERE id = $1")
        .bind(copy)
        .bind(LEGACY)
        .execute(&db.pool)
        .await
        .unwrap();
    send(&keyed.base, &key).await;
    let attempts = finished(&db.pool, &[copy]).await;
    assert_eq!(
        signed_with(&rx_copy, "whsec_legacy0123456789"),
        0,
        "{attempts:?}"
    );
    assert_eq!(attempts[0].1, "failed", "{attempts:?}");
}
