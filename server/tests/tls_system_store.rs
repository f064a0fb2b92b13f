//! HTTPS receivers trusted through the system's store: a CA the machine trusts (here the
//! bundle `SSL_CERT_FILE` names, as OpenSSL and rustls-native-certs read it) is trusted
//! without `POSTHORN_CA_FILE`. Its own test binary: the variable is set for this process
//! before the dispatcher's client is built.

#[path = "it/common/mod.rs"]
mod common;
#[path = "it/tls_common/mod.rs"]
mod tls_common;

use common::*;
use tls_common::*;

#[tokio::test]
async fn a_receiver_whose_ca_is_in_the_system_store_is_trusted_without_the_ca_file() {
    let ca = ca();
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("system-bundle.pem");
    std::fs::write(&bundle, ca.cert.pem()).unwrap();
    std::env::set_var("SSL_CERT_FILE", &bundle);
    let good = tls_receiver(&ca, "localhost", false).await;

    let app = TestApp::spawn().await;
    let (project, _) = app.project("business").await;
    let (status, kind, error) =
        outcome(&app, project, &format!("https://localhost:{good}/hook")).await;
    assert_eq!((status.as_str(), kind), ("succeeded", None), "{error:?}");
    app.stop().await;
}
