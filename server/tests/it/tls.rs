//! HTTPS receivers: a real TLS server in the test, its certificate from a CA made on the
//! spot. Trusted through `POSTHORN_CA_FILE`, the delivery succeeds; without it, with a
//! certificate for another name, or an expired one, the attempt fails with error kind
//! `tls` and the reason.

use crate::common;
use crate::tls_common;

use common::*;
use tls_common::*;

use std::time::Duration;

#[tokio::test]
async fn a_receiver_behind_an_operators_ca_is_trusted_through_the_ca_file_and_refused_otherwise() {
    let ca = ca();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.cert.pem()).unwrap();
    let good = tls_receiver(&ca, "localhost", false).await;
    let other_name = tls_receiver(&ca, "elsewhere.example", false).await;
    let expired = tls_receiver(&ca, "localhost", true).await;

    let path = ca_file.to_string_lossy().to_string();
    let trusting =
        TestApp::spawn_with(move |cfg| cfg.extra_roots = Some(std::fs::read(&path).unwrap())).await;
    let (project, _) = trusting.project("business").await;
    let (status, kind, _) = outcome(
        &trusting,
        project,
        &format!("https://localhost:{good}/hook"),
    )
    .await;
    assert_eq!((status.as_str(), kind), ("succeeded", None));

    let (project, _) = trusting.project("business").await;
    let (_, kind, error) = outcome(
        &trusting,
        project,
        &format!("https://localhost:{other_name}/hook"),
    )
    .await;
    assert_eq!(kind.as_deref(), Some("tls"), "{error:?}");
    assert!(says(&error, &["not valid for name"]), "{error:?}");

    let (project, _) = trusting.project("business").await;
    let (_, kind, error) = outcome(
        &trusting,
        project,
        &format!("https://localhost:{expired}/hook"),
    )
    .await;
    assert_eq!(kind.as_deref(), Some("tls"), "{error:?}");
    assert!(says(&error, &["expired"]), "{error:?}");
    trusting.stop().await;

    // Without the CA file, the same receiver is an unknown issuer.
    let plain = TestApp::spawn().await;
    let (project, _) = plain.project("business").await;
    let (_, kind, error) =
        outcome(&plain, project, &format!("https://localhost:{good}/hook")).await;
    assert_eq!(kind.as_deref(), Some("tls"), "{error:?}");
    assert!(
        says(&error, &["unknownissuer", "unknown issuer"]),
        "{error:?}"
    );
    plain.stop().await;
}

#[tokio::test]
async fn a_receiver_that_offers_http2_gets_it_and_one_connection_carries_its_deliveries() {
    let ca = ca();
    let seen = Seen::default();
    let port = h2_receiver(&ca, seen.clone()).await;
    let pem = ca.cert.pem().into_bytes();
    let app = TestApp::spawn_with(move |cfg| cfg.extra_roots = Some(pem)).await;
    let (project, _) = app.project("business").await;
    app.endpoint(project, &format!("https://localhost:{port}/hook"))
        .await;
    // The first delivery opens the connection; the next two, sent together, share it.
    // (Sent all at once, attempts that start before the first handshake ends cannot know
    // the receiver speaks HTTP/2, and each opens its own.)
    for (sent, n) in [(1, 0..1), (3, 1..3)] {
        for n in n {
            app.ingest(project, "order.paid", serde_json::json!({ "n": n }))
                .await;
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let done: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM deliveries WHERE project_id = $1 AND status = 'succeeded'",
            )
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap();
            if done == sent {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{done} of {sent} delivered"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let versions = seen.versions.lock().unwrap().clone();
    assert_eq!(versions, vec![hyper::Version::HTTP_2; 3]);
    // Kept alive: the three deliveries shared one TLS handshake.
    assert_eq!(
        seen.connections.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    app.stop().await;
}

/// The first attempt of a fresh event to the endpoint: its status, error kind and error.
async fn next_outcome(app: &TestApp, key: &str) -> (String, Option<String>, Option<String>) {
    let (status, body) = app
        .api(
            key,
            reqwest::Method::POST,
            "/events",
            serde_json::json!({"event": "order.paid", "data": {}}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    first_outcome(app, body["id"].as_str().unwrap()).await
}

#[tokio::test]
async fn an_mtls_receiver_refuses_an_endpoint_without_its_certificate_and_accepts_it_with() {
    let (ca, client_ca) = (ca(), ca());
    let port = mtls_receiver(&ca, &client_ca).await;
    let pem = ca.cert.pem().into_bytes();
    let app = TestApp::spawn_with(move |cfg| cfg.extra_roots = Some(pem)).await;
    let (_, key) = app.project("business").await;
    let url = format!("https://localhost:{port}/hook");
    let (status, ep) = app
        .api(
            &key,
            reqwest::Method::POST,
            "/webhooks",
            serde_json::json!({"url": url, "events": ["*"]}),
        )
        .await;
    assert_eq!(status, 201, "{ep}");
    assert_eq!(ep["client_certificate"], serde_json::Value::Null);
    let id = ep["id"].as_i64().unwrap();

    // Without a certificate the receiver ends the handshake.
    let (_, kind, error) = next_outcome(&app, &key).await;
    assert_eq!(kind.as_deref(), Some("tls"), "{error:?}");
    assert!(
        says(&error, &["certificaterequired", "certificate required"]),
        "{error:?}"
    );

    // A key that is not the certificate's is refused when set, with the reason.
    let (cert, cert_key) = leaf_pem(&client_ca, "posthorn-client");
    let (_, stranger_key) = leaf_pem(&client_ca, "someone-else");
    let path = format!("/webhooks/{id}");
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::PATCH,
            &path,
            serde_json::json!({"client_certificate": {"cert": cert, "key": stranger_key}}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not belong"),
        "{body}"
    );

    // With it the delivery succeeds; the endpoint shows subject and expiry, never the key.
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::PATCH,
            &path,
            serde_json::json!({"client_certificate": {"cert": cert, "key": cert_key}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["client_certificate"]["subject"], "CN=posthorn-client");
    assert!(
        body["client_certificate"]["not_after"].is_string(),
        "{body}"
    );
    let (_, got) = app
        .api(&key, reqwest::Method::GET, &path, serde_json::Value::Null)
        .await;
    assert_eq!(got["client_certificate"], body["client_certificate"]);
    assert!(!got.to_string().contains("PRIVATE KEY"), "{got}");
    let (status, kind, error) = next_outcome(&app, &key).await;
    assert_eq!((status.as_str(), kind), ("succeeded", None), "{error:?}");

    // Removed again: refused again.
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::PATCH,
            &path,
            serde_json::json!({"client_certificate": null}),
        )
        .await;
    assert_eq!(
        (status, &body["client_certificate"]),
        (200, &serde_json::Value::Null)
    );
    let (_, kind, _) = next_outcome(&app, &key).await;
    assert_eq!(kind.as_deref(), Some("tls"));
    app.stop().await;
}
