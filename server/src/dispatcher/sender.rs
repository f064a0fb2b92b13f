//! One attempt over HTTP: sign, send, read at most 64 KiB of the answer, classify.

use std::time::Instant;

use app::{
    cfg::Config,
    core::{
        capture_source::{bin_id_of_path, dispatch_pass, DISPATCH_PASS_HEADER},
        classify::{classify_error, classify_status, TransportError, Verdict},
        ed25519,
        ids::new_request_id,
        payload::build_body,
        retry::Next,
        sealed,
        signing::sign_all,
        status::{DeliveryStatus, ErrorKind, Trigger},
    },
};
use chrono::Utc;
use futures::StreamExt;
use reqwest::Client;

mod clients;

use super::{
    brokers::{self, Brokers},
    egress::Failure,
    guard::{is_public, RefusedTarget},
    queue::{Claimed, Outcome},
};

/// Response bodies are kept up to this many bytes.
pub const MAX_RESPONSE_BODY: usize = 64 * 1024;

/// An attempt's signed request, ready to go out.
pub struct Prepared {
    pub body: Vec<u8>,
    pub headers: Vec<(String, String)>,
    /// The headers as recorded (custom ones redacted).
    pub recorded: Vec<(String, String)>,
}

/// What came back: the receiver's status, headers and body (at most
/// [`MAX_RESPONSE_BODY`]), or the transport's failure in words.
pub type Answer = Result<(u16, Vec<(String, String)>, String), (TransportError, String)>;

/// When an attempt's request went out and came back.
struct Timing {
    /// The send itself: for a throttled attempt its start slot, not its claim.
    started_at: chrono::DateTime<Utc>,
    finished_at: chrono::DateTime<Utc>,
    duration_ms: i32,
}

/// What one exchange with the receiver (or its failure) amounted to.
struct Exchange {
    verdict: Verdict,
    response_status: Option<i16>,
    response_headers: Option<Vec<(String, String)>>,
    response_body: Option<String>,
    error_kind: Option<ErrorKind>,
    error: Option<String>,
}

/// Response headers kept per attempt, and their total size: a receiver may answer with
/// thousands of headers, and they are stored with every attempt.
const MAX_RESPONSE_HEADERS: usize = 100;
const MAX_RESPONSE_HEADER_BYTES: usize = 16 * 1024;

/// Replaces the characters PostgreSQL cannot store in text or jsonb.
fn storable(text: String) -> String {
    if text.contains('\0') {
        text.replace('\0', "\u{FFFD}")
    } else {
        text
    }
}

pub struct Sender {
    /// For customers' endpoints: non-public addresses refused unless configured otherwise.
    pools: std::sync::Arc<clients::Pools>,
    /// For Posthorn's own inspector bins, which are always allowed.
    trusted: Client,
    cfg: std::sync::Arc<Config>,
    /// Signs the pass that tells the inspector an attempt to a bin is this installation's
    /// own delivery (see [`app::core::capture_source`]).
    dispatch_key: Vec<u8>,
    /// For endpoints that publish to a broker instead of an HTTP URL.
    brokers: Brokers,
}

impl Sender {
    pub fn new(cfg: std::sync::Arc<Config>, dispatch_key: Vec<u8>) -> reqwest::Result<Sender> {
        let maker = std::sync::Arc::new(clients::Maker::new(&cfg)?);
        Ok(Sender {
            trusted: maker.base().build()?,
            pools: clients::Pools::new(maker)?,
            brokers: Brokers::new(cfg.clone()),
            cfg,
            dispatch_key,
        })
    }

    /// Judged on the parsed URL, so `…/r/../elsewhere` is not mistaken for a bin.
    fn is_own_bin(&self, url: &reqwest::Url) -> bool {
        reqwest::Url::parse(&self.cfg.public_url)
            .is_ok_and(|public| public.origin() == url.origin())
            && url.path().starts_with("/r/")
    }

    /// Sends one claimed attempt and decides what follows. Never fails: every failure is
    /// an outcome to record.
    pub async fn attempt(&self, row: &Claimed, jitter: f64) -> Outcome {
        match self.prepare(row, Utc::now().timestamp()) {
            Ok(request) => self.send_prepared(row, request, jitter).await,
            Err(e) => self.internal_failure(row, &e, jitter),
        }
    }

    /// The signed request of an attempt, timestamped `timestamp` (Unix seconds). A
    /// throttled attempt is prepared before it waits for its start slot, stamped with the
    /// slot's second, so nothing but the send itself follows the slot's check.
    /// Fails only when the endpoint's sealed secrets do not open (a missing key).
    pub fn prepare(&self, row: &Claimed, timestamp: i64) -> Result<Prepared, String> {
        let body = build_body(
            &row.of.event_id,
            &row.of.event_type,
            row.event_created_at,
            &row.data,
        );
        let active = ed25519::active(
            &row.signature_scheme,
            row.scheme_switched_at,
            row.signing_key.is_some(),
            Utc::now(),
        );
        // HMAC signatures (`X-Botix-Signature`, `v1,`) only while the endpoint signs with
        // its secret: an ed25519 endpoint's receivers hold no secret that could forge.
        let mut standard = Vec::with_capacity(2);
        let mut botix = None;
        if active.hmac {
            let slot = sealed::ENDPOINT_SECRET.of(row.of.project_id, row.of.endpoint_id);
            let open = |s: &str| sealed::open(slot, s);
            let secret = open(&row.secret).map_err(|e| e.to_string())?;
            let previous = row.previous_secret.as_deref().map(open).transpose();
            let previous = previous.map_err(|e| e.to_string())?;
            let mut secrets = vec![secret.as_str()];
            if let Some(prev) = previous.as_deref() {
                secrets.push(prev);
            }
            let sigs = sign_all(&secrets, &row.of.event_id, timestamp, &body);
            botix = Some(sigs.botix);
            standard.push(sigs.standard);
        }
        if let Some(key) = row.signing_key.as_deref().filter(|_| active.ed25519) {
            let slot = sealed::SIGNING_KEY.of(row.of.project_id, row.of.endpoint_id);
            let key = sealed::open(slot, key).map_err(|e| e.to_string())?;
            standard.push(ed25519::sign(&key, &row.of.event_id, timestamp, &body)?);
        }
        let mut headers: Vec<(String, String)> =
            vec![("Content-Type".into(), "application/json".into())];
        if let Some(botix) = botix {
            headers.push(("X-Botix-Signature".into(), botix));
        }
        headers.extend([
            ("X-Botix-Timestamp".into(), timestamp.to_string()),
            ("X-Event-Id".into(), row.of.event_id.to_string()),
            ("X-Event-Type".into(), row.of.event_type.clone()),
            ("X-Delivery-Attempt".into(), row.attempt.to_string()),
            ("X-Request-Id".into(), row.request_id.clone()),
            ("webhook-id".into(), row.of.event_id.to_string()),
            ("webhook-timestamp".into(), timestamp.to_string()),
            ("webhook-signature".into(), standard.join(" ")),
        ]);
        // The event's trace continues into the receiver (W3C Trace Context), unless its
        // project keeps it.
        if let Some((parent, state)) = crate::telemetry::outgoing(row) {
            headers.push(("traceparent".into(), parent));
            if let Some(state) = state {
                headers.push(("tracestate".into(), state));
            }
        }
        // Custom headers (credentials, typically) go to the endpoint only, never to a
        // bin, and are recorded redacted.
        let mut recorded = headers.clone();
        if row.trigger != Trigger::Redirect {
            let slot = sealed::HEADER_VALUE.of(row.of.project_id, row.of.endpoint_id);
            let custom =
                sealed::open_headers(slot, &row.custom_headers.0).map_err(|e| e.to_string())?;
            for (k, v) in custom {
                if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(&k)) {
                    recorded.push((k.clone(), app::core::custom_headers::REDACTED.to_string()));
                    headers.push((k, v));
                }
            }
        }
        Ok(Prepared {
            body,
            headers,
            recorded,
        })
    }

    /// Sends a prepared attempt and decides what follows (see [`Sender::attempt`]).
    pub async fn send_prepared(&self, row: &Claimed, request: Prepared, jitter: f64) -> Outcome {
        let Prepared {
            body,
            mut headers,
            recorded,
        } = request;
        // A delivery to one of Posthorn's own bins carries the pass that has the inspector
        // count it against its project, not against the address it comes from. Sent, never
        // recorded: it is no part of what the receiver gets.
        if let Some(bin_id) = reqwest::Url::parse(&row.of.target_url)
            .ok()
            .filter(|url| self.is_own_bin(url))
            .and_then(|url| bin_id_of_path(url.path()).map(str::to_string))
        {
            let pass = dispatch_pass(
                &self.dispatch_key,
                row.of.project_id,
                Utc::now().timestamp(),
                &bin_id,
                &row.request_id,
            );
            headers.push((DISPATCH_PASS_HEADER.to_string(), pass));
        }
        let started_at = Utc::now();
        let started = Instant::now();
        // A Redirect goes to its bin over HTTP, whatever the endpoint is.
        if row.destination != "http" && row.trigger != Trigger::Redirect {
            let published = self.brokers.publish(row, &headers, &body).await;
            let duration_ms = started.elapsed().as_millis().min(i32::MAX as u128) as i32;
            let timing = Timing {
                started_at,
                finished_at: Utc::now(),
                duration_ms,
            };
            return self.conclude(row, published_exchange(published), recorded, timing, jitter);
        }
        let result = self.send(row, &headers, body).await;
        let duration_ms = started.elapsed().as_millis().min(i32::MAX as u128) as i32;
        self.judge(row, recorded, started_at, duration_ms, result, jitter)
    }

    /// The outcome of an attempt whose request went out at `started_at` and took
    /// `duration_ms`, from the receiver's answer (status, headers, body) or the transport's
    /// failure: the same rules whoever carried it (this sender, or a listen session's CLI).
    pub fn judge(
        &self,
        row: &Claimed,
        recorded: Vec<(String, String)>,
        started_at: chrono::DateTime<Utc>,
        duration_ms: i32,
        result: Answer,
        jitter: f64,
    ) -> Outcome {
        let timing = Timing {
            started_at,
            finished_at: Utc::now(),
            duration_ms,
        };
        let finished_at = timing.finished_at;
        let exchange = match result {
            Ok((status, resp_headers, resp_body)) => {
                let retry_after = resp_headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("retry-after"))
                    .map(|(_, v)| v.clone());
                let verdict = classify_status(status, retry_after.as_deref(), finished_at);
                let failed = !matches!(verdict, Verdict::Succeeded);
                Exchange {
                    verdict,
                    response_status: Some(status as i16),
                    response_headers: Some(resp_headers),
                    response_body: Some(resp_body),
                    error_kind: failed.then_some(ErrorKind::HttpStatus),
                    error: failed.then(|| format!("endpoint answered {status}")),
                }
            }
            Err((kind, message)) => Exchange {
                verdict: classify_error(kind),
                response_status: None,
                response_headers: None,
                response_body: None,
                error_kind: Some(kind.kind()),
                error: Some(message),
            },
        };
        self.conclude(row, exchange, recorded, timing, jitter)
    }

    /// The outcome of an attempt that broke inside Posthorn (a bug, not the receiver):
    /// recorded as error kind `internal` and retried on the schedule like a network error.
    pub fn internal_failure(&self, row: &Claimed, message: &str, jitter: f64) -> Outcome {
        let exchange = Exchange {
            verdict: Verdict::Retryable { retry_after: None },
            response_status: None,
            response_headers: None,
            response_body: None,
            error_kind: Some(ErrorKind::Internal),
            error: Some(format!("internal error: {message}")),
        };
        let now = Utc::now();
        let timing = Timing {
            started_at: now,
            finished_at: now,
            duration_ms: 0,
        };
        self.conclude(row, exchange, Vec::new(), timing, jitter)
    }

    /// The outcome of an attempt whose event was erased before it was sent: a dead
    /// letter, error kind `erased`, nothing sent and nothing scheduled.
    pub fn erased(&self, row: &Claimed) -> Outcome {
        let now = Utc::now();
        Outcome {
            id: row.id,
            created_at: row.created_at,
            status: DeliveryStatus::DeadLetter,
            started_at: now,
            finished_at: now,
            duration_ms: 0,
            request_headers: Vec::new(),
            response_status: None,
            response_headers: None,
            response_body: None,
            error_kind: Some(ErrorKind::Erased),
            error: Some("event erased: nothing left to send".into()),
            chain_started_at: row.chain_started_at.unwrap_or(row.created_at.min(now)),
            next: None,
        }
    }

    /// Applies the retry policy to what happened and builds the row's outcome.
    fn conclude(
        &self,
        row: &Claimed,
        exchange: Exchange,
        request_headers: Vec<(String, String)>,
        timing: Timing,
        jitter: f64,
    ) -> Outcome {
        let Timing {
            started_at,
            finished_at,
            duration_ms,
        } = timing;
        let chain_start = row
            .chain_started_at
            .unwrap_or(row.created_at.min(finished_at));
        let chains = row.trigger.chains();
        let next = self.cfg.retry.next_attempt(
            exchange.verdict,
            row.attempt.max(0) as u32,
            chains,
            chain_start,
            finished_at,
            jitter,
        );
        let (status, next) = match next {
            Next::Succeeded => (DeliveryStatus::Succeeded, None),
            Next::DeadLetter => (DeliveryStatus::DeadLetter, None),
            Next::RetryAt(at) => (
                DeliveryStatus::Failed,
                Some(row.follow_up(at, new_request_id())),
            ),
        };
        // Text from the receiver is stored as text: PostgreSQL refuses NUL characters, and
        // one such answer must not make the whole batch of outcomes unwritable.
        Outcome {
            id: row.id,
            created_at: row.created_at,
            status,
            started_at,
            finished_at,
            duration_ms,
            request_headers,
            response_status: exchange.response_status,
            response_headers: exchange.response_headers.map(|h| {
                h.into_iter()
                    .map(|(k, v)| (storable(k), storable(v)))
                    .collect()
            }),
            response_body: exchange.response_body.map(storable),
            error_kind: exchange.error_kind,
            error: exchange.error.map(storable),
            chain_started_at: chain_start,
            next,
        }
    }

    async fn send(&self, row: &Claimed, headers: &[(String, String)], body: Vec<u8>) -> Answer {
        let parsed = reqwest::Url::parse(&row.of.target_url)
            .map_err(|e| (TransportError::Other, format!("bad target URL: {e}")))?;
        let own_bin = self.is_own_bin(&parsed);
        // An IP literal never reaches the resolver, so it is checked here.
        if !own_bin && !self.cfg.allow_private_targets {
            let literal = match parsed.host() {
                Some(url::Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
                Some(url::Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
                _ => None,
            };
            if let Some(ip) = literal.filter(|ip| !is_public(*ip)) {
                return Err((TransportError::RefusedTarget, RefusedTarget(ip).to_string()));
            }
        }
        // A Redirect to a bin never carries the endpoint's certificate.
        let with_cert = match (&row.client_cert, &row.client_key) {
            (Some(cert), Some(key)) if !own_bin && row.trigger != Trigger::Redirect => Some(
                self.pools
                    .identities
                    .client(row.of.project_id, row.of.endpoint_id, cert, key)
                    .map_err(|e| (TransportError::Other, format!("client certificate: {e}")))?,
            ),
            _ => None,
        };
        let client = match (with_cert, own_bin) {
            (Some(client), _) => client,
            (None, true) => self.trusted.clone(),
            (None, false) => self.pools.shared(),
        };
        let mut req = client.post(parsed.clone()).body(body);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        // Through the egress proxy, a refused target or a proxy that is down closes the
        // connection: the loopback guard says which it was.
        let egress = self.pools.maker.egress.as_ref().filter(|_| !own_bin);
        let failed = |e: reqwest::Error| match egress.and_then(|g| g.failure(&parsed)) {
            Some(Failure::Refused(why)) => (TransportError::RefusedTarget, why),
            Some(Failure::Egress(why)) => (TransportError::Connect, why),
            None => classify_reqwest(&e),
        };
        let exchange = async {
            let resp = req.send().await.map_err(failed)?;
            let status = resp.status().as_u16();
            let mut header_bytes = 0;
            let resp_headers: Vec<(String, String)> = resp
                .headers()
                .iter()
                .take(MAX_RESPONSE_HEADERS)
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .take_while(|(k, v)| {
                    header_bytes += k.len() + v.len();
                    header_bytes <= MAX_RESPONSE_HEADER_BYTES
                })
                .collect();
            let mut stream = resp.bytes_stream();
            let mut buf: Vec<u8> = Vec::new();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| classify_reqwest(&e))?;
                let room = MAX_RESPONSE_BODY - buf.len();
                buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if buf.len() >= MAX_RESPONSE_BODY {
                    break; // the rest is not read at all
                }
            }
            Ok((
                status,
                resp_headers,
                String::from_utf8_lossy(&buf).into_owned(),
            ))
        };
        match tokio::time::timeout(self.cfg.read_timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err((
                TransportError::Timeout,
                format!(
                    "no complete response within {} ms",
                    self.cfg.read_timeout.as_millis()
                ),
            )),
        }
    }
}

/// What a publish to a broker amounted to: the broker's answer is the response body
/// (there is no HTTP status), a lasting refusal dead-letters at once (error kind
/// `refused`), a broken connection or timeout is retried.
fn published_exchange(published: Result<String, brokers::Failure>) -> Exchange {
    let (verdict, body, kind, error) = match published {
        Ok(answer) => (Verdict::Succeeded, Some(answer), None, None),
        Err(brokers::Failure::Refused(why)) => (
            Verdict::Fatal,
            Some(why.clone()),
            Some(ErrorKind::Refused),
            Some(why),
        ),
        Err(brokers::Failure::Transport(kind, why)) => {
            (classify_error(kind), None, Some(kind.kind()), Some(why))
        }
    };
    Exchange {
        verdict,
        response_status: None,
        response_headers: None,
        response_body: body,
        error_kind: kind,
        error,
    }
}

fn classify_reqwest(e: &reqwest::Error) -> (TransportError, String) {
    let mut chain = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(e);
    let mut refused = false;
    while let Some(err) = source {
        if err.downcast_ref::<RefusedTarget>().is_some() {
            refused = true;
        }
        if !chain.is_empty() {
            chain.push_str(": ");
        }
        chain.push_str(&err.to_string());
        source = err.source();
    }
    let lower = chain.to_lowercase();
    let kind = if refused || lower.contains("refused target") {
        TransportError::RefusedTarget
    } else if e.is_timeout() {
        TransportError::Timeout
    } else if lower.contains("dns error")
        || lower.contains("failed to lookup")
        || lower.contains("name or service not known")
    {
        TransportError::Dns
    } else if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake")
    {
        TransportError::Tls
    } else if e.is_connect() {
        TransportError::Connect
    } else {
        TransportError::Other
    };
    (kind, chain)
}
