//! `posthorn listen`: opens a listen session on a Posthorn server, holds its WebSocket,
//! forwards each delivery to a local URL with the headers and body a real endpoint gets,
//! and reports the local answer back as the attempt's outcome. Reconnects with backoff;
//! what arrives while it is away waits on the server (parked attempts), so nothing is
//! lost within the session's 10 minutes.

use app::core::EventId;
use std::{sync::Arc, time::Duration};

use futures::{SinkExt, StreamExt};
use rand::Rng;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::{self, client::IntoClientRequest, Message};

use super::protocol::{bound_headers, encode, truncate, FromCli, ToCli, MAX_TO_CLI};

/// A local answer's body is reported up to this many bytes (the server keeps as much).
const MAX_BODY: usize = 64 * 1024;
/// A local receiver that takes longer is reported as timed out (the server's own
/// deadline, 5 s past its read timeout, is longer).
const LOCAL_TIMEOUT: Duration = Duration::from_secs(25);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

#[derive(clap::Args)]
pub struct Args {
    /// The local receiver, e.g. http://localhost:8000/webhooks.
    #[arg(long)]
    pub forward: String,
    /// An event type or pattern, as an endpoint's `events` (repeat it; default: all).
    #[arg(long = "events")]
    pub events: Vec<String>,
    /// A CEL filter, as an endpoint's.
    #[arg(long)]
    pub filter: Option<String>,
    /// The Posthorn server (default: POSTHORN_URL, else http://127.0.0.1:3000).
    #[arg(long)]
    pub server: Option<String>,
    /// Name the session: a CLI restarted with the same name within 10 minutes
    /// reattaches to it (same secret, the deliveries that waited).
    #[arg(long)]
    pub name: Option<String>,
    /// Print `secret: whsec_…` at start, for the local receiver's signature check.
    #[arg(long)]
    pub print_secret: bool,
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

pub async fn run(args: Args) -> Result<(), Failure> {
    let key = std::env::var("POSTHORN_API_KEY")
        .map_err(|_| "POSTHORN_API_KEY must hold the project's API key")?;
    let server = args
        .server
        .clone()
        .or_else(|| std::env::var("POSTHORN_URL").ok())
        .unwrap_or_else(|| "http://127.0.0.1:3000".into());
    let server = server.trim_end_matches('/').to_string();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let session = open(&http, &server, &key, &args).await?;
    let id = session["endpoint"]["id"].as_i64().unwrap_or_default();
    if args.print_secret {
        println!("secret: {}", session["secret"].as_str().unwrap_or_default());
    }
    let connect_path = session["connect_path"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    eprintln!(
        "posthorn listen: session #{id}{} forwarding to {}{}",
        args.name
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default(),
        args.forward,
        if session["reattached"].as_bool() == Some(true) {
            " (reattached)"
        } else {
            ""
        }
    );
    let ws_url = format!(
        "{}{connect_path}",
        server
            .replacen("https://", "wss://", 1)
            .replacen("http://", "ws://", 1)
    );
    let forward = Arc::new((http, args.forward.clone()));
    let mut backoff = Duration::from_millis(500);
    loop {
        // `attach` watches for Ctrl-C itself, to say goodbye before it returns.
        match attach(&ws_url, &key, forward.clone()).await {
            Ok(Attached::Stopped) => return Ok(()),
            Ok(Attached::Dropped { delivered }) => {
                if delivered {
                    backoff = Duration::from_millis(500);
                }
            }
            Err(Fatal(message)) => return Err(message.into()),
        }
        let jitter = rand::thread_rng().gen_range(0.5..1.0);
        let wait = backoff.mul_f64(jitter);
        eprintln!(
            "posthorn listen: connection lost; again in {:.1} s",
            wait.as_secs_f64()
        );
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop_signal() => return Ok(()),
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// POST /public/v1/listen: the session, its secret and where its WebSocket is.
async fn open(
    http: &reqwest::Client,
    server: &str,
    key: &str,
    args: &Args,
) -> Result<serde_json::Value, Failure> {
    let mut body = serde_json::json!({ "forward": args.forward });
    if !args.events.is_empty() {
        body["events"] = serde_json::json!(args.events);
    }
    if let Some(name) = &args.name {
        body["name"] = serde_json::json!(name);
    }
    if let Some(filter) = &args.filter {
        body["filter"] = serde_json::json!(filter);
    }
    let resp = http
        .post(format!("{server}/public/v1/listen"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("cannot reach {server}: {e}"))?;
    let status = resp.status();
    let answer: serde_json::Value = resp.json().await.unwrap_or_default();
    if !status.is_success() {
        let message = answer["error"]["message"]
            .as_str()
            .unwrap_or("no reason given");
        return Err(format!("the server refused the session ({status}): {message}").into());
    }
    Ok(answer)
}

enum Attached {
    /// Ctrl-C or SIGTERM: said goodbye.
    Stopped,
    /// The connection broke; `delivered`: it had carried something (the backoff starts
    /// over).
    Dropped { delivered: bool },
}

/// A refusal that reconnecting cannot change.
struct Fatal(String);

async fn attach(
    ws_url: &str,
    key: &str,
    forward: Arc<(reqwest::Client, String)>,
) -> Result<Attached, Fatal> {
    let mut request = ws_url
        .into_client_request()
        .map_err(|e| Fatal(format!("bad server URL: {e}")))?;
    let auth = format!("Bearer {key}")
        .parse()
        .map_err(|_| Fatal("POSTHORN_API_KEY is not a valid header value".into()))?;
    request.headers_mut().insert("authorization", auth);
    let config = tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(MAX_TO_CLI))
        .max_frame_size(Some(MAX_TO_CLI));
    let connected = tokio_tungstenite::connect_async_tls_with_config(
        request,
        Some(config),
        false,
        Some(tls_connector()),
    )
    .await;
    let socket = match connected {
        Ok((socket, _)) => socket,
        Err(tungstenite::Error::Http(resp))
            if matches!(resp.status().as_u16(), 401 | 403 | 404) =>
        {
            let body = resp
                .body()
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            return Err(Fatal(format!(
                "the server refused the connection ({}): {body}; the session may have ended (10 minutes without a connection)",
                resp.status()
            )));
        }
        Err(e) => {
            eprintln!("posthorn listen: {e}");
            return Ok(Attached::Dropped { delivered: false });
        }
    };
    let (mut sink, mut stream) = socket.split();
    let (answers, mut to_send) = mpsc::channel::<FromCli>(64);
    let mut delivered = false;
    // The server pings every 20 s: a connection silent for much longer is gone (a laptop
    // that slept, a load balancer that dropped it) even if no error says so.
    let silence = super::session::HEARTBEAT * 3;
    let mut last_heard = tokio::time::Instant::now();
    let mut watch = tokio::time::interval(super::session::HEARTBEAT);
    loop {
        tokio::select! {
            _ = watch.tick() => {
                if last_heard.elapsed() > silence {
                    eprintln!("posthorn listen: nothing from the server for {} s", silence.as_secs());
                    return Ok(Attached::Dropped { delivered });
                }
            }
            msg = stream.next() => {
                last_heard = tokio::time::Instant::now();
                match msg {
                    Some(Ok(Message::Text(t))) => on_text(&t, &answers, &forward, &mut delivered),
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                        return Ok(Attached::Dropped { delivered })
                    }
                    Some(Ok(_)) => {}
                }
            }
            Some(answer) = to_send.recv() => {
                let text = encode(answer);
                if sink.send(Message::Text(text.into())).await.is_err() {
                    return Ok(Attached::Dropped { delivered });
                }
            }
            _ = stop_signal() => {
                let bye = serde_json::to_string(&FromCli::Bye).unwrap_or_default();
                let _ = sink.send(Message::Text(bye.into())).await;
                let _ = sink.close().await;
                return Ok(Attached::Stopped);
            }
        }
    }
}

/// A message from the server: a delivery is forwarded in a task of its own, its answer
/// sent back through `answers`.
fn on_text(
    text: &str,
    answers: &mpsc::Sender<FromCli>,
    forward: &Arc<(reqwest::Client, String)>,
    delivered: &mut bool,
) {
    match serde_json::from_str::<ToCli>(text) {
        Ok(ToCli::Ready { .. }) => eprintln!("posthorn listen: connected; waiting for events"),
        Ok(ToCli::Delivery {
            id,
            event_id,
            event_type,
            headers,
            body,
            ..
        }) => {
            *delivered = true;
            let answers = answers.clone();
            let forward = forward.clone();
            tokio::spawn(async move {
                let (http, url) = &*forward;
                let answer = deliver(http, url, id, &event_id, &event_type, headers, body).await;
                let _ = answers.send(answer).await;
            });
        }
        Err(e) => eprintln!("posthorn listen: unreadable message from the server: {e}"),
    }
}

/// Forwards one delivery and prints its line: time, event type, webhook-id, status, ms.
async fn deliver(
    http: &reqwest::Client,
    url: &str,
    id: String,
    event_id: &EventId,
    event_type: &str,
    headers: Vec<(String, String)>,
    body: String,
) -> FromCli {
    let started = std::time::Instant::now();
    let mut req = http.post(url).timeout(LOCAL_TIMEOUT).body(body);
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let result = async {
        let mut resp = req.send().await?;
        let status = resp.status().as_u16();
        let headers = bound_headers(
            resp.headers()
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
        );
        // At most MAX_BODY bytes are read; the rest of the answer is left unread.
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await? {
            bytes.extend_from_slice(&chunk[..chunk.len().min(MAX_BODY - bytes.len())]);
            if bytes.len() >= MAX_BODY {
                break;
            }
        }
        let mut body = String::from_utf8_lossy(&bytes).into_owned();
        truncate(&mut body, MAX_BODY);
        Ok::<_, reqwest::Error>((status, headers, body))
    }
    .await;
    let duration_ms = started.elapsed().as_millis().min(u32::MAX as u128) as u32;
    let time = chrono::Local::now().format("%Y-%m-%d %H:%M:%S");
    match result {
        Ok((status, headers, body)) => {
            println!("{time}  {event_type:<24}  {event_id}  {status}  {duration_ms} ms");
            FromCli::Answer {
                id,
                status: Some(status),
                headers,
                body,
                error_kind: None,
                error: None,
                duration_ms,
            }
        }
        Err(e) => {
            let kind = if e.is_timeout() {
                "timeout"
            } else if e.is_connect() {
                "connect"
            } else {
                "other"
            };
            println!("{time}  {event_type:<24}  {event_id}  failed ({kind})  {duration_ms} ms");
            let mut words = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                words.push_str(&format!(": {s}"));
                source = s.source();
            }
            FromCli::Answer {
                id,
                status: None,
                headers: Vec::new(),
                body: String::new(),
                error_kind: Some(kind.into()),
                error: Some(words),
                duration_ms,
            }
        }
    }
}

/// TLS for `wss://` servers: the system's roots, with ring as everywhere else.
fn tls_connector() -> tokio_tungstenite::Connector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map(|b| b.with_root_certificates(roots).with_no_client_auth());
    match config {
        Ok(config) => tokio_tungstenite::Connector::Rustls(Arc::new(config)),
        Err(_) => tokio_tungstenite::Connector::Plain,
    }
}

/// Ctrl-C or SIGTERM.
async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
