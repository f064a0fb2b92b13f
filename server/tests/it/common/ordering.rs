//! A receiver for ordering-key tests that answers by what each event's data asks, and
//! a caller of the public API that sends keyed events and batches.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, http::HeaderMap, response::IntoResponse, Router};
use serde_json::{json, Value};

use super::TestApp;

/// One request as the receiver saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub event: String,
    pub request_id: String,
    pub attempt: u32,
    pub at: Instant,
}

#[derive(Clone, Default)]
pub struct Log {
    pub seen: Arc<Mutex<Vec<Seen>>>,
    pub in_flight: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
}

/// A receiver that answers by what the event's data asks: `fail_first` fails attempt 1
/// with 503, `fail_always` always fails with 500, `slow_ms` delays the answer. It counts
/// requests being answered at once (`peak`).
pub struct Rx {
    pub url: String,
    pub log: Log,
}

impl Rx {
    pub async fn start() -> Rx {
        let log = Log::default();
        let app = Router::new().fallback(answer).with_state(log.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Rx { url, log }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.log.seen.lock().unwrap().clone()
    }

    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Seen> {
        let deadline = Instant::now() + within;
        loop {
            let seen = self.seen();
            if seen.len() >= n || Instant::now() > deadline {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub async fn answer(
    State(log): State<Log>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let now = log.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    log.peak.fetch_max(now, Ordering::SeqCst);
    let h = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let attempt: u32 = h("x-delivery-attempt").parse().unwrap_or(0);
    log.seen.lock().unwrap().push(Seen {
        event: h("x-event-id"),
        request_id: h("x-request-id"),
        attempt,
        at: Instant::now(),
    });
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let data = &body["data"];
    if let Some(ms) = data["slow_ms"].as_u64() {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let status = if data["fail_always"] == true {
        500
    } else if data["fail_first"] == true && attempt == 1 {
        503
    } else {
        204
    };
    log.in_flight.fetch_sub(1, Ordering::SeqCst);
    axum::http::StatusCode::from_u16(status)
        .unwrap()
        .into_response()
}

#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub key: String,
    pub client: reqwest::Client,
}

impl Api {
    pub async fn post(&self, path: &str, body: Value) -> Value {
        let r = self
            .client
            .post(format!("{}/public/v1{path}", self.base))
            .bearer_auth(&self.key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    pub async fn get(&self, path: &str) -> Value {
        let r = self
            .client
            .get(format!("{}/public/v1{path}", self.base))
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().await.unwrap()
    }

    /// Sends the events in one batch; returns their ids in array order.
    pub async fn batch(&self, events: Vec<Value>) -> Vec<String> {
        let v = self
            .post("/events/batch", json!({ "events": events }))
            .await;
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    }

    pub async fn event(&self, key: &str, data: Value) -> String {
        let v = self
            .post(
                "/events",
                json!({"event": "order.updated", "data": data, "ordering_key": key}),
            )
            .await;
        v["id"].as_str().unwrap().to_string()
    }
}

pub fn keyed(key: &str, data: Value) -> Value {
    json!({"event": "order.updated", "data": data, "ordering_key": key})
}

pub async fn setup(app: &TestApp, rx: &Rx) -> Api {
    let (_, key) = app.project("business").await;
    let api = Api {
        base: app.base.clone(),
        key,
        client: reqwest::Client::new(),
    };
    api.post("/webhooks", json!({"url": rx.url, "events": ["*"]}))
        .await;
    api
}

/// The receipts of these events, in arrival order, as (event, attempt).
pub fn order_of(seen: &[Seen], events: &[&String]) -> Vec<(String, u32)> {
    seen.iter()
        .filter(|s| events.contains(&&s.event))
        .map(|s| (s.event.clone(), s.attempt))
        .collect()
}

/// Waits until no attempt of the database is pending or in flight.
pub async fn drained(pool: &sqlx::PgPool, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM deliveries WHERE status IN ('pending', 'in_flight')",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if open == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{open} attempts still open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn with_retry(schedule: &'static str) -> impl FnOnce(&mut app::cfg::Config) {
    move |cfg| {
        cfg.retry.schedule = app::core::duration::parse_schedule(schedule).unwrap();
    }
}
