//! Test harness: a fresh database per test, the real app on a random port, and real
//! HTTP receivers on loopback whose answers a test scripts in advance.
#![allow(dead_code)]

pub mod api_calls;
pub mod browser;
pub mod ordering;
pub mod process;
pub mod smtp;

use app::core::ProjectId;
use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use app::{cfg::Config, core::event_type::EventType, db};
use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Router,
};
use server::{dispatcher::Dispatcher, metrics::Metrics, web};
use sqlx::{postgres::PgPoolOptions, PgPool};
use tokio::sync::watch;

pub fn admin_url() -> String {
    std::env::var("POSTHORN_TEST_DATABASE_URL")
        .or_else(|_| std::env::var("DATABASE_URL"))
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn with_database(url: &str, db: &str) -> String {
    let mut u = url::Url::parse(url).expect("database url");
    u.set_path(&format!("/{db}"));
    u.to_string()
}

/// A database of its own, migrated.
pub struct TestDb {
    pub pool: PgPool,
    pub url: String,
}

impl TestDb {
    pub async fn new() -> TestDb {
        Self::on(&admin_url()).await
    }

    /// A fresh database on the server behind `admin_url`.
    pub async fn on(admin_url: &str) -> TestDb {
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(admin_url)
            .await
            .expect("connect to PostgreSQL for tests");
        let name = format!("ph_test_{}", ulid::Ulid::new().to_string().to_lowercase());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin)
            .await
            .expect("create test database");
        admin.close().await;
        let url = with_database(admin_url, &name);
        let pool = PgPoolOptions::new()
            .max_connections(20)
            .connect(&url)
            .await
            .expect("connect to test database");
        db::migrate(&pool).await.expect("migrate");
        web::session_store(&pool)
            .migrate()
            .await
            .expect("session table");
        TestDb { pool, url }
    }
}

pub fn test_config(db_url: &str) -> Config {
    let mut cfg = Config::from_env_with(|name| match name {
        "DATABASE_URL" => Some(db_url.to_string()),
        "POSTHORN_ALLOW_PRIVATE_TARGETS" => Some("true".into()),
        "POSTHORN_RETRY_SCHEDULE" => Some("200ms,200ms,200ms".into()),
        "POSTHORN_READ_TIMEOUT" => Some("2s".into()),
        "POSTHORN_CONNECT_TIMEOUT" => Some("1s".into()),
        "POSTHORN_LEASE" => Some("3s".into()),
        "POSTHORN_ALERT_INTERVAL" => Some("200ms".into()),
        _ => None,
    })
    .expect("test config");
    cfg.site_addr = "127.0.0.1:0".parse().unwrap();
    cfg
}

/// The whole product on a random port: web, API, inspector and one dispatcher.
pub struct TestApp {
    pub addr: SocketAddr,
    pub base: String,
    pub pool: PgPool,
    pub db_url: String,
    /// The writers storing the API's lone events together (unless configured off).
    pub group: Option<Arc<app::db::group_commit::GroupCommit>>,
    stop: watch::Sender<bool>,
    handles: Vec<tokio::task::JoinHandle<()>>,
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::spawn_with(|_| {}).await
    }

    pub async fn spawn_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
        let db = TestDb::new().await;
        Self::spawn_on(db, tweak, true).await
    }

    pub async fn spawn_on(
        db: TestDb,
        tweak: impl FnOnce(&mut Config),
        with_dispatcher: bool,
    ) -> TestApp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut cfg = test_config(&db.url);
        cfg.site_addr = addr;
        cfg.public_url = format!("http://{addr}");
        tweak(&mut cfg);
        let cfg = Arc::new(cfg);
        let metrics = Arc::new(Metrics::default());
        let (stop, rx) = watch::channel(false);
        let mut handles = Vec::new();
        let mut handoff = None;
        if with_dispatcher {
            let mut dispatcher = Dispatcher::new(db.pool.clone(), cfg.clone(), metrics.clone());
            handoff = cfg.handoff.then(|| dispatcher.handoff());
            handles.push(tokio::spawn(dispatcher.run(rx.clone())));
            handles.push(tokio::spawn(server::replayer::run(
                db.pool.clone(),
                rx.clone(),
            )));
        }
        // Alerts, mailed when the test configured SMTP.
        let mailer = server::alerts::Mailer::from_config(&cfg).expect("smtp url");
        handles.push(tokio::spawn(server::alerts::run(
            db.pool.clone(),
            cfg.alert_interval,
            mailer,
            rx.clone(),
        )));
        let group = (cfg.ingest_writers > 0).then(|| {
            app::db::group_commit::GroupCommit::start(db.pool.clone(), cfg.ingest_writers)
        });
        let state = web::AppState {
            leptos_options: web::leptos_options(&cfg),
            pool: db.pool.clone(),
            cfg,
            metrics,
            handoff,
            group: group.clone(),
            targets: Default::default(),
        };
        let mut stop_rx = rx.clone();
        handles.push(tokio::spawn(async move {
            let _ = web::serve(state, listener, async move {
                let _ = stop_rx.wait_for(|s| *s).await;
            })
            .await;
        }));
        TestApp {
            addr,
            base: format!("http://{addr}"),
            pool: db.pool,
            db_url: db.url,
            group,
            stop,
            handles,
        }
    }

    /// A project with an owner and an API key: (project id, key).
    pub async fn project(&self, plan: &str) -> (i64, String) {
        let email = format!("owner-{}@example.com", ulid::Ulid::new());
        let user = db::users::upsert(&self.pool, &email, "password-123", "user")
            .await
            .unwrap();
        let p = db::projects::create(&self.pool, "Test", plan, user.id)
            .await
            .unwrap();
        let (key, _) = db::api_keys::create(&self.pool, p.id, "test")
            .await
            .unwrap();
        (p.id.get(), key)
    }

    /// A public API call with `key`: its status and JSON body (null when none).
    pub async fn api(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        body: serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let r = reqwest::Client::new()
            .request(method, format!("{}/public/v1{path}", self.base))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(serde_json::Value::Null))
    }

    pub async fn endpoint(&self, project_id: i64, url: &str) -> (i64, String) {
        let access = app::auth::system_access(ProjectId::new(project_id), "test");
        let (ep, secret) = db::endpoints::create(
            &mut self.pool.acquire().await.unwrap(),
            &access,
            db::endpoints::NewEndpoint {
                url,
                event_types: &["*".into()],
                description: "",
                rate_limit: None,
            },
        )
        .await
        .unwrap();
        (ep.id.get(), secret)
    }

    /// Sends `n` `order.paid` events through the public API, `at_once` at a time;
    /// returns the answers' statuses.
    pub async fn post_events(&self, key: &str, n: usize, at_once: usize) -> Vec<u16> {
        use futures::StreamExt;
        let client = reqwest::Client::new();
        futures::stream::iter(0..n)
            .map(|i| {
                let request = client
                    .post(format!("{}/public/v1/events", self.base))
                    .bearer_auth(key)
                    .json(&serde_json::json!({ "event": "order.paid", "data": { "i": i } }));
                async move { request.send().await.unwrap().status().as_u16() }
            })
            .buffer_unordered(at_once)
            .collect()
            .await
    }

    pub async fn ingest(
        &self,
        project_id: i64,
        event_type: &str,
        data: serde_json::Value,
    ) -> String {
        String::from(
            db::events::ingest(
                &self.pool,
                ProjectId::new(project_id),
                &EventType::parse(event_type).unwrap(),
                &data.to_string(),
                None,
            )
            .await
            .unwrap()
            .event_id,
        )
    }

    /// Attempts of one event, oldest first: (attempt, status, response_status, error_kind, request_id).
    pub async fn attempts(
        &self,
        event_id: &str,
    ) -> Vec<(i32, String, Option<i16>, Option<String>, String)> {
        sqlx::query_as(
            "SELECT attempt, status, response_status, error_kind, request_id FROM deliveries
             WHERE event_id = $1 ORDER BY created_at, id",
        )
        .bind(event_id)
        .fetch_all(&self.pool)
        .await
        .unwrap()
    }

    /// Waits until the event's newest attempt is final (succeeded or dead_letter).
    pub async fn settled(
        &self,
        event_id: &str,
        within: Duration,
    ) -> Vec<(i32, String, Option<i16>, Option<String>, String)> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let a = self.attempts(event_id).await;
            if a.last()
                .is_some_and(|l| l.1 == "succeeded" || l.1 == "dead_letter")
            {
                return a;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("event {event_id} did not settle within {within:?}: {a:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for h in self.handles {
            let _ = tokio::time::timeout(Duration::from_secs(10), h).await;
        }
    }
}

/// One request as a receiver saw it.
#[derive(Clone, Debug)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: std::time::Instant,
}

/// What the receiver answers next: status, extra headers, delay.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub delay: Duration,
    pub body: String,
}

impl Answer {
    pub fn status(status: u16) -> Answer {
        Answer {
            status,
            headers: vec![],
            delay: Duration::ZERO,
            body: "ok".into(),
        }
    }
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Answer {
        self.headers.push((name, value.into()));
        self
    }
    pub fn delay(mut self, d: Duration) -> Answer {
        self.delay = d;
        self
    }
}

#[derive(Clone, Default)]
struct ReceiverState {
    seen: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
    default: Arc<Mutex<Option<Answer>>>,
}

/// A real HTTP server on loopback that records requests and answers from a script
/// (then with the default answer, 200 unless changed).
pub struct Receiver {
    pub url: String,
    state: ReceiverState,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let state = ReceiverState::default();
        let app = Router::new().fallback(receive).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { url, state }
    }

    pub fn script(&self, answers: impl IntoIterator<Item = Answer>) {
        self.state.script.lock().unwrap().extend(answers);
    }

    pub fn set_default(&self, answer: Answer) {
        *self.state.default.lock().unwrap() = Some(answer);
    }

    pub fn seen(&self) -> Vec<Received> {
        self.state.seen.lock().unwrap().clone()
    }

    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let seen = self.seen();
            if seen.len() >= n || tokio::time::Instant::now() > deadline {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn receive(State(state): State<ReceiverState>, headers: HeaderMap, body: Bytes) -> Response {
    state.seen.lock().unwrap().push(Received {
        headers,
        body,
        at: std::time::Instant::now(),
    });
    let answer = state
        .script
        .lock()
        .unwrap()
        .pop_front()
        .or_else(|| state.default.lock().unwrap().clone())
        .unwrap_or_else(|| Answer::status(200));
    if !answer.delay.is_zero() {
        tokio::time::sleep(answer.delay).await;
    }
    let mut resp = (StatusCode::from_u16(answer.status).unwrap(), answer.body).into_response();
    for (k, v) in answer.headers {
        resp.headers_mut().insert(k, v.parse().unwrap());
    }
    resp
}

pub fn header<'a>(r: &'a Received, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}
