//! Deliveries through an egress proxy (`POSTHORN_EGRESS_PROXY`): a small CONNECT proxy
//! in the test stands for the operator's. It asks for credentials, records what it is
//! asked to connect to, and reaches "public" addresses by mapping them to receivers on
//! loopback. The target guard stays on: a target whose name resolves to a private
//! address is refused before the proxy hears of it, and Posthorn's own bins are reached
//! without the proxy.

use crate::common;
use crate::tls_common;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use common::*;
use tls_common::*;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// The test's egress proxy: the CONNECT targets it was asked for, with the credentials.
#[derive(Clone, Default)]
struct Proxy {
    asked: Arc<Mutex<Vec<(String, String)>>>,
}

/// Starts a CONNECT proxy that sends `requested authority` to `actual address` (and
/// refuses anything else with 403); returns its port.
async fn connect_proxy(routes: HashMap<String, String>, proxy: Proxy) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let routes = Arc::new(routes);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let (routes, proxy) = (routes.clone(), proxy.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if conn.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let auth = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Proxy-Authorization: "))
                    .unwrap_or("")
                    .to_string();
                proxy
                    .asked
                    .lock()
                    .unwrap()
                    .push((target.clone(), auth.clone()));
                if auth != format!("Basic {}", STANDARD.encode("hooks:s3cret")) {
                    let _ = conn
                        .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                        .await;
                    return;
                }
                let Some(actual) = routes.get(&target) else {
                    let _ = conn.write_all(b"HTTP/1.1 403 Forbidden\r\n\r\n").await;
                    return;
                };
                let Ok(mut upstream) = TcpStream::connect(actual).await else {
                    return;
                };
                let _ = conn
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await;
                let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
            });
        }
    });
    port
}

/// The product with the target guard on, sending through the test's proxy on
/// `proxy_port` with its credentials, trusting `roots` beside the usual ones.
async fn through(proxy_port: u16, roots: Option<Vec<u8>>) -> TestApp {
    let proxy = format!("http://hooks:s3cret@127.0.0.1:{proxy_port}");
    TestApp::spawn_with(move |cfg| {
        cfg.allow_private_targets = false;
        cfg.extra_roots = roots;
        cfg.egress_proxy = Some(app::cfg::EgressProxy::parse(&proxy).unwrap());
    })
    .await
}

#[tokio::test]
async fn deliveries_go_through_the_egress_proxy_to_checked_addresses_only() {
    let ca = ca();
    let rx = Receiver::start().await;
    let rx_addr = rx
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/hook");
    let tls_port = tls_receiver(&ca, "1.0.0.1", false).await;
    let routes = HashMap::from([
        ("1.1.1.1:80".to_string(), rx_addr.to_string()),
        ("1.0.0.1:443".to_string(), format!("127.0.0.1:{tls_port}")),
    ]);
    let proxy = Proxy::default();
    let proxy_port = connect_proxy(routes, proxy.clone()).await;
    let app = through(proxy_port, Some(ca.cert.pem().into_bytes())).await;

    // Plain HTTP and HTTPS, both tunnelled to the address the dispatcher checked; TLS
    // runs end to end with the receiver, whose certificate names that address.
    let (project, _) = app.project("business").await;
    let (status, kind, error) = outcome(&app, project, "http://1.1.1.1/hook").await;
    assert_eq!((status.as_str(), kind), ("succeeded", None), "{error:?}");
    assert_eq!(rx.seen().len(), 1);
    // A second delivery on the kept connection: neither carries the guard's token (nor
    // any proxy credentials) to the receiver.
    app.ingest(project, "order.paid", serde_json::json!({"n": 2}))
        .await;
    let seen = rx.wait_for(2, std::time::Duration::from_secs(10)).await;
    assert_eq!(seen.len(), 2);
    for r in &seen {
        assert!(
            r.headers.get("proxy-authorization").is_none(),
            "{:?}",
            r.headers
        );
    }
    let (project, _) = app.project("business").await;
    let (status, kind, error) = outcome(&app, project, "https://1.0.0.1/hook").await;
    assert_eq!((status.as_str(), kind), ("succeeded", None), "{error:?}");

    // A name that resolves to a private address is refused by the guard; the proxy is
    // never asked for it.
    let (project, _) = app.project("business").await;
    let target = format!(
        "http://localhost:{}/hook",
        rx_addr.rsplit(':').next().unwrap()
    );
    let (status, kind, error) = outcome(&app, project, &target).await;
    assert_eq!(status, "dead_letter");
    assert_eq!(kind.as_deref(), Some("refused_target"), "{error:?}");
    assert!(
        says(
            &error,
            &["resolves to a loopback address, not a public address"]
        ) && !says(&error, &["127.0.0.1"]),
        "{error:?}"
    );
    assert_eq!(rx.seen().len(), 2, "nothing reached the receiver");

    let asked: Vec<String> = proxy
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.0.clone())
        .collect();
    assert_eq!(asked, vec!["1.1.1.1:80", "1.0.0.1:443"]);

    // Posthorn's own inspector bins are reached directly, not through the proxy.
    let bin = reqwest::Client::new()
        .post(format!("{}/inspector/bins", app.base))
        .send()
        .await
        .unwrap();
    let bin: serde_json::Value = bin.json().await.unwrap();
    let (project, _) = app.project("business").await;
    let (status, _, error) = outcome(&app, project, bin["url"].as_str().unwrap()).await;
    assert_eq!(status, "succeeded", "{error:?}");
    assert_eq!(proxy.asked.lock().unwrap().len(), 2, "the proxy saw no bin");
    app.stop().await;
}

#[tokio::test]
async fn an_egress_proxy_that_is_down_or_refuses_fails_the_attempt_with_the_reason() {
    let proxy = Proxy::default();
    // Knows no route: every CONNECT is refused with 403.
    let proxy_port = connect_proxy(HashMap::new(), proxy.clone()).await;
    let app = through(proxy_port, None).await;
    let (project, _) = app.project("business").await;
    let (status, kind, error) = outcome(&app, project, "http://1.1.1.1/hook").await;
    assert_eq!(status, "failed", "retried later, as a connection error is");
    assert_eq!(kind.as_deref(), Some("connect"), "{error:?}");
    assert!(says(&error, &["egress proxy answered 403"]), "{error:?}");
    app.stop().await;
}

/// A broker destination goes through the egress proxy too: the proxy is asked for the
/// broker's checked address, and a broker whose address is private is refused by the
/// guard before the proxy hears of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_destination_goes_through_the_egress_proxy() {
    let redis = crate::destinations::brokers::Broker::redis(None);
    let routes = HashMap::from([(
        "1.1.1.1:6379".to_string(),
        format!("127.0.0.1:{}", redis.port),
    )]);
    let proxy = Proxy::default();
    let proxy_port = connect_proxy(routes, proxy.clone()).await;
    let app = through(proxy_port, None).await;
    let private = format!("redis://127.0.0.1:{}", redis.port);
    for (url, expected) in [
        ("redis://1.1.1.1:6379", ("succeeded", None)),
        (private.as_str(), ("dead_letter", Some("refused_target"))),
    ] {
        // A project of its own for each, so each event has the one endpoint.
        let (_, key) = app.project("business").await;
        let destination = serde_json::json!({"type": "redis", "url": url, "stream": "s"});
        let (status, _) = app
            .api(
                &key,
                reqwest::Method::POST,
                "/webhooks",
                serde_json::json!({"events": ["*"], "destination": destination}),
            )
            .await;
        assert_eq!(status, 201);
        let (_, sent) = app
            .api(
                &key,
                reqwest::Method::POST,
                "/events",
                serde_json::json!({"event": "order.paid", "data": {}}),
            )
            .await;
        let id = sent["id"].as_str().unwrap().to_string();
        let attempts = app.settled(&id, std::time::Duration::from_secs(20)).await;
        let last = attempts.last().unwrap();
        assert_eq!(
            (last.1.as_str(), last.3.as_deref()),
            expected,
            "{attempts:?}"
        );
    }
    let asked: Vec<String> = proxy
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.0.clone())
        .collect();
    assert_eq!(
        asked,
        vec!["1.1.1.1:6379"],
        "the proxy saw the checked address only"
    );
    assert_eq!(
        redis_len(redis.port),
        1,
        "the event reached the stream through the tunnel"
    );
    app.stop().await;
}

/// The length of stream `s` on the Redis at `port`, asked in RESP by hand.
fn redis_len(port: u16) -> i64 {
    use std::io::{BufRead, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"*2\r\n$4\r\nXLEN\r\n$1\r\ns\r\n").unwrap();
    let mut line = String::new();
    std::io::BufReader::new(s).read_line(&mut line).unwrap();
    line.trim().trim_start_matches(':').parse().unwrap()
}
