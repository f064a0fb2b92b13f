//! A TLS receiver for the HTTPS tests: a CA made on the spot, a server certificate it
//! signs, one request and one answer per connection; and the first attempt's outcome.
//! Each test binary uses part of it.
#![allow(dead_code)]

use std::{sync::Arc, time::Duration};

use super::common::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct Ca {
    pub cert: rcgen::Certificate,
    pub key: KeyPair,
}

pub fn ca() -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "Posthorn test CA");
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca { cert, key }
}

/// A certificate for `name` that `ca` signs, and its key, as PEM: a client certificate.
pub fn leaf_pem(ca: &Ca, name: &str) -> (String, String) {
    let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A server's TLS settings: a new key and a certificate for `params` that `ca` signs;
/// with `client_ca`, a client certificate that it signs is required.
fn server_config_with(
    ca: &Ca,
    params: CertificateParams,
    client_ca: Option<&Ca>,
) -> tokio_rustls::rustls::ServerConfig {
    use tokio_rustls::rustls;
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(client_ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(client_ca.cert.der().clone()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    builder
        .with_single_cert(
            vec![cert.der().clone()],
            tokio_rustls::rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap()
}

fn server_config(ca: &Ca, params: CertificateParams) -> tokio_rustls::rustls::ServerConfig {
    server_config_with(ca, params, None)
}

/// A receiver on 127.0.0.1 answering 200 over TLS with a certificate for `name`, signed
/// by `ca`, valid now unless `expired`. Returns its port.
pub async fn tls_receiver(ca: &Ca, name: &str, expired: bool) -> u16 {
    let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    serve_tls(server_config(ca, params)).await
}

/// A receiver for `localhost` that requires a client certificate signed by `client_ca`.
pub async fn mtls_receiver(ca: &Ca, client_ca: &Ca) -> u16 {
    let params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    serve_tls(server_config_with(ca, params, Some(client_ca))).await
}

/// Serves one request and one answer per connection with `config`; returns the port.
async fn serve_tls(config: tokio_rustls::rustls::ServerConfig) -> u16 {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                // One request (its headers and a body of Content-Length), one answer.
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let Ok(n) = tls.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&seen).to_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length: usize = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        if seen.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let _ = tls
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    )
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    port
}

/// Whether the recorded error gives one of these reasons (any case).
pub fn says(error: &Option<String>, reasons: &[&str]) -> bool {
    let error = error.as_deref().unwrap_or("").to_lowercase();
    reasons.iter().any(|r| error.contains(r))
}

/// The first attempt's status, error kind and error once it has an outcome.
pub async fn outcome(
    app: &TestApp,
    project: i64,
    url: &str,
) -> (String, Option<String>, Option<String>) {
    app.endpoint(project, url).await;
    let event = app
        .ingest(project, "order.paid", serde_json::json!({"n": 1}))
        .await;
    first_outcome(app, &event).await
}

/// The first attempt of `event`'s status, error kind and error once it has an outcome.
pub async fn first_outcome(app: &TestApp, event: &str) -> (String, Option<String>, Option<String>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let first: Option<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT status, error_kind, error FROM deliveries WHERE event_id = $1
              AND status NOT IN ('pending', 'in_flight') ORDER BY id LIMIT 1",
        )
        .bind(event)
        .fetch_optional(&app.pool)
        .await
        .unwrap();
        if let Some(first) = first {
            return first;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no outcome for {event}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What an HTTP/2-capable receiver saw: each request's HTTP version, and how many TLS
/// connections carried them.
#[derive(Clone, Default)]
pub struct Seen {
    pub versions: Arc<std::sync::Mutex<Vec<hyper::Version>>>,
    pub connections: Arc<std::sync::atomic::AtomicUsize>,
}

/// A receiver on 127.0.0.1 offering `h2` and `http/1.1` by ALPN (as most HTTPS servers
/// do), answering 200 to every request on a connection. Returns its port.
pub async fn h2_receiver(ca: &Ca, seen: Seen) -> u16 {
    let params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let mut config = server_config(ca, params);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                seen.connections
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let service = hyper::service::service_fn(move |req: hyper::Request<_>| {
                    seen.versions.lock().unwrap().push(req.version());
                    async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new("ok".to_string()))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    port
}
