//! Tracing across processes: one event sent with a `traceparent` produces spans under
//! that trace id in `posthorn serve --no-dispatch` (the API call) and in a separate
//! `posthorn dispatch` (the attempt), exported over OTLP/HTTP to a collector here that
//! decodes them with the official protobuf definitions; the webhook's receiver gets a
//! `traceparent` in the same trace whose parent is the attempt's span. A project that
//! turns propagation off sends none. Also: `/metrics` behind `POSTHORN_METRICS_TOKEN`,
//! and JSON logs.

use crate::common::{self, header, Receiver, TestApp, TestDb};

use std::{
    collections::HashMap,
    net::SocketAddr,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::{
    collector::{metrics::v1::ExportMetricsServiceRequest, trace::v1::ExportTraceServiceRequest},
    common::v1::any_value::Value as AnyValue,
};
use prost::Message;

/// One span as the collector got it.
#[derive(Clone, Debug)]
struct Got {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    attributes: HashMap<String, String>,
    /// (trace id, span id) of each link.
    links: Vec<(String, String)>,
}

/// An OTLP/HTTP collector on loopback: takes `POST /v1/traces` and `/v1/metrics`
/// (protobuf) and keeps every span, and every metric's service and name.
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Got>>>,
    metrics: Arc<Mutex<Vec<(String, String)>>>,
}

impl Collector {
    async fn start() -> Collector {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let spans: Arc<Mutex<Vec<Got>>> = Arc::default();
        let metrics: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let kept = spans.clone();
        let named = metrics.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let kept = kept.clone();
                let named = named.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let kept = kept.clone();
                            let named = named.clone();
                            async move {
                                let path = req.uri().path().to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                if path == "/v1/traces" {
                                    let export = ExportTraceServiceRequest::decode(body.clone())
                                        .expect("an OTLP trace export");
                                    kept.lock().unwrap().extend(spans_of(export));
                                }
                                if path == "/v1/metrics" {
                                    let export = ExportMetricsServiceRequest::decode(body)
                                        .expect("an OTLP metrics export");
                                    named.lock().unwrap().extend(metrics_of(export));
                                }
                                let answer = hyper::Response::builder()
                                    .header("content-type", "application/x-protobuf")
                                    .body(Full::new(Bytes::new()))
                                    .unwrap();
                                Ok::<_, hyper::Error>(answer)
                            }
                        },
                    );
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Collector {
            url: format!("http://{addr}"),
            spans,
            metrics,
        }
    }

    /// Waits for the first span that `is` picks.
    async fn span(&self, what: &str, is: impl Fn(&Got) -> bool) -> Got {
        self.wait(what, |spans| spans.iter().find(|s| is(s)).cloned())
            .await
    }

    /// Waits until `found` picks something out of the spans seen so far.
    async fn wait<T>(&self, what: &str, found: impl Fn(&[Got]) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(t) = found(&self.spans.lock().unwrap()) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} among {:#?}",
                self.spans.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn text(v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        _ => String::new(),
    }
}

fn metrics_of(export: ExportMetricsServiceRequest) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for rm in export.resource_metrics {
        let service = rm
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|a| a.key == "service.name")
            .map(|a| text(&a.value))
            .unwrap_or_default();
        for m in rm.scope_metrics.into_iter().flat_map(|s| s.metrics) {
            out.push((service.clone(), m.name));
        }
    }
    out
}

fn spans_of(export: ExportTraceServiceRequest) -> Vec<Got> {
    let mut out = Vec::new();
    for rs in export.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|a| a.key == "service.name")
            .map(|a| text(&a.value))
            .unwrap_or_default();
        for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
            out.push(Got {
                service: service.clone(),
                name: span.name,
                trace_id: hex::encode(&span.trace_id),
                span_id: hex::encode(&span.span_id),
                parent: hex::encode(&span.parent_span_id),
                attributes: span
                    .attributes
                    .iter()
                    .map(|a| (a.key.clone(), text(&a.value)))
                    .collect(),
                links: span
                    .links
                    .iter()
                    .map(|l| (hex::encode(&l.trace_id), hex::encode(&l.span_id)))
                    .collect(),
            });
        }
    }
    out
}

fn posthorn(command: &str, db_url: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_posthorn"));
    cmd.arg(command)
        .env("DATABASE_URL", db_url)
        .env("POSTHORN_ALLOW_PRIVATE_TARGETS", "true")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("RUST_LOG", "info,sqlx=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Starts `cmd` (a `posthorn serve` at `base`) and waits until it answers: beside the
/// whole suite on two cores a start can take a while; if it never comes, its log says why.
async fn started(mut cmd: Command, base: &str, log: &tempfile::NamedTempFile) -> Child {
    let mut child = cmd.spawn().expect("start posthorn serve");
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        let exited = child.try_wait().unwrap();
        if exited.is_some() || Instant::now() > deadline {
            let text = std::fs::read_to_string(log.path()).unwrap_or_default();
            panic!("posthorn serve did not start ({exited:?}):\n{text}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child
}

fn stop(mut child: Child) {
    // SIGTERM, so the exporters flush what they hold.
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test]
async fn one_event_is_one_trace_from_the_api_call_through_another_process_to_the_receiver() {
    let db = TestDb::new().await;
    let db_url = db.url.clone();
    // In process, only to make the project and its endpoint.
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let collector = Collector::start().await;
    let rx = Receiver::start().await;
    let (project, key) = app.project("business").await;

    let port = common::process::free_port();
    let base = format!("http://127.0.0.1:{port}");
    // A quiet log: what RUST_LOG keeps of the log has no say over the spans exported.
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str()),
        ("RUST_LOG", "warn"),
        ("LEPTOS_SITE_ADDR", &base[7..]),
    ];
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut api = posthorn("serve", &db_url, &otel);
    api.arg("--no-dispatch")
        .env("OTEL_SERVICE_NAME", "posthorn-api")
        .stderr(log.reopen().unwrap());
    let api = started(api, &base, &log).await;
    // Made by the child (another test may have given this process a sealing key).
    let made: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/public/v1/webhooks"))
        .bearer_auth(&key)
        .json(&serde_json::json!({"url": rx.url, "events": ["*"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let secret = made["secret"].as_str().expect("a secret").to_string();
    let dispatch = posthorn("dispatch", &db_url, &[otel[0], otel[1]])
        .env("OTEL_SERVICE_NAME", "posthorn-dispatch")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "500")
        .spawn()
        .unwrap();

    let caller = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    let sent = reqwest::Client::new()
        .post(format!("{base}/public/v1/events"))
        .bearer_auth(&key)
        .header("traceparent", &caller)
        .header("tracestate", "platform=abc")
        .json(&serde_json::json!({"event": "order.paid", "data": {"card": "4242-secret"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 202);

    let got = rx.wait_for(1, Duration::from_secs(30)).await;
    let tp = header(&got[0], "traceparent").to_string();
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "{tp}");
    assert_eq!(
        parts[1], CALLER_TRACE,
        "the receiver continues the caller's trace"
    );
    assert_ne!(
        parts[2], CALLER_SPAN,
        "its parent is the attempt, not the caller"
    );
    assert_eq!(header(&got[0], "tracestate"), "platform=abc");

    let request = collector
        .span("API request span", |s| {
            s.name == "POST /public/v1/events" && s.trace_id == CALLER_TRACE
        })
        .await;
    assert_eq!(request.service, "posthorn-api");
    assert_eq!(request.parent, CALLER_SPAN);
    assert_eq!(request.attributes["http.route"], "/public/v1/events");
    assert_eq!(request.attributes["http.response.status_code"], "202");

    // The statement that stored it with other requests' events: linked to this request,
    // not its child.
    let link = (CALLER_TRACE.to_string(), request.span_id.clone());
    let group = collector
        .span("group commit span", |s| {
            s.name == "ingest group commit" && s.links.contains(&link)
        })
        .await;
    assert_eq!(group.service, "posthorn-api");
    assert_ne!(
        group.trace_id, CALLER_TRACE,
        "a group is a trace of its own"
    );

    let attempt = collector
        .span("attempt span", |s| {
            s.name == "deliver" && s.trace_id == CALLER_TRACE
        })
        .await;
    assert_eq!(
        attempt.service, "posthorn-dispatch",
        "sent by the other process"
    );
    assert_eq!(
        attempt.parent, request.span_id,
        "the attempt hangs under the API call"
    );
    assert_eq!(
        attempt.span_id, parts[2],
        "the receiver's parent is the attempt"
    );
    assert_eq!(attempt.attributes["posthorn.attempt"], "1");
    assert_eq!(attempt.attributes["posthorn.outcome"], "succeeded");
    assert_eq!(attempt.attributes["http.response.status_code"], "200");
    assert_eq!(
        attempt.attributes["posthorn.project_id"],
        project.to_string()
    );
    // Ids and counts only: no payload, secret or header value in any span.
    for span in collector.spans.lock().unwrap().iter() {
        for (k, v) in &span.attributes {
            assert!(
                !v.contains("4242-secret") && !v.contains(&secret) && !v.contains(&key),
                "{} carries {k}={v}",
                span.name
            );
        }
    }
    collector
        .span("claim span", |s| {
            s.name == "claim" && s.service == "posthorn-dispatch"
        })
        .await;

    // The dispatcher serves no /metrics: its counters reach the collector over OTLP.
    let deadline = Instant::now() + Duration::from_secs(30);
    let wanted = (
        "posthorn-dispatch".to_string(),
        "posthorn_attempts_total".to_string(),
    );
    while !collector.metrics.lock().unwrap().contains(&wanted) {
        assert!(Instant::now() < deadline, "no attempts counter over OTLP");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A project that keeps its trace context: nothing goes to its receivers.
    let operator = app::db::operator_keys::create(&app.pool, "platform")
        .await
        .unwrap();
    let patched: serde_json::Value = reqwest::Client::new()
        .patch(format!("{}/operator/v1/projects/{project}", app.base))
        .bearer_auth(&operator)
        .json(&serde_json::json!({"trace_propagation": false}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(patched["trace_propagation"], false, "{patched}");
    let sent = reqwest::Client::new()
        .post(format!("{base}/public/v1/events"))
        .bearer_auth(&key)
        .header("traceparent", &caller)
        .json(&serde_json::json!({"event": "order.paid", "data": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 202);
    let got = rx.wait_for(2, Duration::from_secs(30)).await;
    assert!(got[1].headers.get("traceparent").is_none());
    assert!(got[1].headers.get("tracestate").is_none());

    stop(api);
    stop(dispatch);
    app.stop().await;
}

#[tokio::test]
async fn metrics_want_the_token_when_one_is_set_and_logs_can_be_json() {
    let db = TestDb::new().await;
    let port = common::process::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = posthorn(
        "serve",
        &db.url,
        &[
            ("LEPTOS_SITE_ADDR", &base[7..]),
            ("POSTHORN_METRICS_TOKEN", "scrape-me"),
            ("POSTHORN_LOG_FORMAT", "json"),
        ],
    );
    cmd.stderr(log.reopen().unwrap());
    let server = common::process::started(&mut cmd, &base).await;
    let http = reqwest::Client::new();
    let none = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(none.status(), 401);
    let wrong = http
        .get(format!("{base}/metrics"))
        .bearer_auth("scrape-m")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = http
        .get(format!("{base}/metrics"))
        .bearer_auth("scrape-me")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    let text = right.text().await.unwrap();
    assert!(
        text.contains(
            "posthorn_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"4xx\"} 2"
        ),
        "{text}"
    );
    assert!(text.contains("posthorn_db_connections{pool=\"main\",state=\"busy\"}"));
    stop(server);
    let lines = std::fs::read_to_string(log.path()).unwrap();
    let parsed: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        parsed.iter().any(|l| l["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("listening on"))),
        "{lines}"
    );
    assert!(parsed
        .iter()
        .all(|l| l["level"].is_string() && l["timestamp"].is_string()));
}
