//! The rig every API scenario runs on: a scratch database, `posthorn serve`, the receiver,
//! and a project with its API key.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use sqlx::PgPool;

use super::{
    empty_db,
    measure::CpuSample,
    posthorn,
    processes::{ReceiverProcess, ServerProcess},
    unix_micros,
};

pub struct Rig {
    pub pool: PgPool,
    pub db_url: String,
    pub server: ServerProcess,
    pub receiver: ReceiverProcess,
    pub client: reqwest::Client,
    pub key: String,
}

impl Rig {
    pub async fn start(extra_env: &[(String, String)]) -> Rig {
        let (pool, url) = empty_db().await;
        posthorn(&url, &["migrate"]);
        let receiver = ReceiverProcess::start();
        let server = ServerProcess::start(&url, extra_env).await;
        let key = Self::project(&url);
        Rig {
            pool,
            db_url: url,
            server,
            receiver,
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(256)
                .build()
                .unwrap(),
            key,
        }
    }

    /// A business project through the CLI; its API key.
    pub fn project(db_url: &str) -> String {
        let email = format!("bench-{}@example.com", ulid::Ulid::new());
        let out = posthorn(
            db_url,
            &[
                "create-project",
                "--name",
                "bench",
                "--owner-email",
                &email,
                "--owner-password",
                "bench-password-1",
                "--plan",
                "business",
            ],
        );
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("create-project JSON");
        v["api_key"].as_str().expect("api_key").to_string()
    }

    pub fn receiver_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.receiver.port)
    }

    /// An endpoint through the API; returns its id.
    pub async fn endpoint(&self, key: &str, url: &str) -> i64 {
        self.endpoint_filtered(key, url, None).await
    }

    /// An endpoint for every event type, with `filter` if given.
    pub async fn endpoint_filtered(&self, key: &str, url: &str, filter: Option<&str>) -> i64 {
        self.create_endpoint(
            key,
            serde_json::json!({ "url": url, "events": ["*"], "filter": filter }),
        )
        .await
    }

    /// An endpoint for every event type publishing to a broker `destination`.
    pub async fn endpoint_to(
        &self,
        key: &str,
        destination: serde_json::Value,
        filter: Option<&str>,
    ) -> i64 {
        let body =
            serde_json::json!({ "destination": destination, "events": ["*"], "filter": filter });
        self.create_endpoint(key, body).await
    }

    /// `POST /public/v1/webhooks` with `body`; the new endpoint's id.
    async fn create_endpoint(&self, key: &str, body: serde_json::Value) -> i64 {
        let r: serde_json::Value = self
            .client
            .post(format!("{}/public/v1/webhooks", self.server.base))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["id"].as_i64().unwrap_or_else(|| panic!("endpoint: {r}"))
    }

    /// Disables an endpoint through the API.
    pub async fn disable(&self, key: &str, endpoint: i64) {
        let r = self
            .client
            .patch(format!(
                "{}/public/v1/webhooks/{endpoint}",
                self.server.base
            ))
            .bearer_auth(key)
            .json(&serde_json::json!({ "enabled": false }))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "disable: {}", r.status());
    }

    /// Sends one event (with the ordering key `key-{i % keys}` when `keys` > 0); returns
    /// its id.
    pub async fn send(
        client: &reqwest::Client,
        base: &str,
        key: &str,
        i: u64,
        keys: u64,
    ) -> Option<String> {
        let ordering = match keys {
            0 => String::new(),
            n => format!(r#","ordering_key":"key-{}""#, i % n),
        };
        let r = client
            .post(format!("{base}/public/v1/events"))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(format!(
                r#"{{"event":"order.paid","data":{{"order":{i},"amount":4200,"currency":"EUR"}}{ordering}}}"#
            ))
            .send()
            .await
            .ok()?;
        if r.status() != StatusCode::ACCEPTED {
            return None;
        }
        let v: serde_json::Value = r.json().await.ok()?;
        v["id"].as_str().map(str::to_string)
    }

    /// Sends `n` events in one `POST /events/batch`; returns how many were accepted.
    pub async fn send_batch(
        client: &reqwest::Client,
        base: &str,
        key: &str,
        i: u64,
        n: u64,
    ) -> u64 {
        let items: Vec<String> = (i..i + n)
            .map(|j| {
                format!(
                    r#"{{"event":"order.paid","data":{{"order":{j},"amount":4200,"currency":"EUR"}}}}"#
                )
            })
            .collect();
        let sent = client
            .post(format!("{base}/public/v1/events/batch"))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body(format!(r#"{{"events":[{}]}}"#, items.join(",")))
            .send()
            .await;
        match sent {
            Ok(r) if r.status() == StatusCode::ACCEPTED => n,
            _ => 0,
        }
    }

    /// Offers `rate` events per second for `seconds` on the schedule; returns each
    /// accepted event's id with its intended send time (unix µs), and the refused count.
    pub async fn paced(&self, key: &str, rate: u64, seconds: u64) -> (Vec<(String, i64)>, u64) {
        self.paced_keyed(key, rate, seconds, 0).await
    }

    /// [`Self::paced`], the events spread over `keys` ordering keys.
    pub async fn paced_keyed(
        &self,
        key: &str,
        rate: u64,
        seconds: u64,
        keys: u64,
    ) -> (Vec<(String, i64)>, u64) {
        let total = rate * seconds;
        let start = Instant::now() + Duration::from_millis(50);
        let start_unix = unix_micros() + 50_000;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..total {
            let offset = Duration::from_nanos(i * 1_000_000_000 / rate);
            tokio::time::sleep_until((start + offset).into()).await;
            let (client, base, key) = (
                self.client.clone(),
                self.server.base.clone(),
                key.to_string(),
            );
            let intended = start_unix + offset.as_micros() as i64;
            tasks.spawn(async move { (Self::send(&client, &base, &key, i, keys).await, intended) });
        }
        let mut sent = Vec::with_capacity(total as usize);
        let mut refused = 0;
        while let Some(r) = tasks.join_next().await {
            match r.unwrap() {
                (Some(id), at) => sent.push((id, at)),
                (None, _) => refused += 1,
            }
        }
        (sent, refused)
    }

    /// Waits until the receiver holds `n` receipts (or `within` passes).
    pub async fn wait_received(&self, n: u64, within: Duration) {
        let deadline = Instant::now() + within;
        let url = self.receiver_url("/received");
        while Instant::now() < deadline {
            let got = match self.client.get(&url).send().await {
                Ok(r) => r.text().await.ok().and_then(|t| t.parse::<u64>().ok()),
                Err(_) => None,
            };
            if got.is_some_and(|got| got >= n) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn wait_for(&self, sql: &str, until: impl Fn(i64) -> bool, within: Duration) {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            let n: i64 = sqlx::query_scalar(sql)
                .fetch_one(&self.pool)
                .await
                .unwrap_or(0);
            if until(n) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn cpu(&self) -> CpuSample {
        CpuSample::take(self.server.pid(), self.receiver.child.id())
    }
}
