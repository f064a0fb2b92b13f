//! HTTPS receivers: a real TLS server in the test, its certificate from a CA made on the
//! spot. Trusted through `POSTHORN_CA_FILE`, the delivery succeeds; without it, with a
//! certificate for another name, or an expired one, the attempt fails with error kind
//! `tls` and the reason.

mod common;
mod tls_common;

use common::*;
use tls_common::*;

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
