//! The processes a run measures: the receiver (this binary, `posthorn-bench receiver`)
//! and `posthorn serve`.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Read, Write},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, Router};

use super::{posthorn_bin, unix_micros};

type Seen = Arc<Mutex<Vec<(String, i64)>>>;

async fn receive(State(seen): State<Seen>, headers: HeaderMap, _body: Bytes) -> StatusCode {
    let at = unix_micros();
    if let Some(id) = headers.get("webhook-id").and_then(|v| v.to_str().ok()) {
        seen.lock().unwrap().push((id.to_string(), at));
    }
    StatusCode::NO_CONTENT
}

/// How many receipts so far: the benchmark waits on this rather than counting rows in
/// the database, which would be its own load on the database it measures.
async fn received(State(seen): State<Seen>) -> String {
    seen.lock().unwrap().len().to_string()
}

async fn receive_slowly(state: State<Seen>, headers: HeaderMap, body: Bytes) -> StatusCode {
    tokio::time::sleep(Duration::from_secs(1)).await;
    receive(state, headers, body).await
}

/// Answers `204` (`/slow`: after 1 s), prints its port, and when its stdin closes prints
/// every receipt as `webhook-id unix-µs` and exits. One worker thread, like one nginx
/// worker process.
pub fn receiver() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let seen: Seen = Arc::default();
        let app = Router::new()
            .route("/slow", axum::routing::post(receive_slowly))
            .route("/received", axum::routing::get(received))
            .fallback(receive)
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap().port());
        std::io::stdout().flush().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await
        .unwrap();
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for (id, at) in seen {
            writeln!(out, "{id} {at}").unwrap();
        }
    });
}

pub struct ReceiverProcess {
    pub child: Child,
    lines: BufReader<std::process::ChildStdout>,
    pub port: u16,
}

impl ReceiverProcess {
    pub fn start() -> ReceiverProcess {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .arg("receiver")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the receiver process");
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut port = String::new();
        lines.read_line(&mut port).unwrap();
        ReceiverProcess {
            port: port.trim().parse().expect("receiver port"),
            child,
            lines,
        }
    }

    /// Stops it and returns the first receipt time of each webhook-id, and the count.
    pub fn finish(mut self) -> (HashMap<String, i64>, usize) {
        drop(self.child.stdin.take());
        let mut first = HashMap::new();
        let mut all = 0;
        let mut line = String::new();
        while self.lines.read_line(&mut line).unwrap_or(0) > 0 {
            if let Some((id, at)) = line.trim().split_once(' ') {
                all += 1;
                let at: i64 = at.parse().unwrap_or(0);
                first
                    .entry(id.to_string())
                    .and_modify(|t: &mut i64| *t = (*t).min(at))
                    .or_insert(at);
            }
            line.clear();
        }
        let _ = self.child.wait();
        (first, all)
    }

    /// Stops it and returns every receipt's time.
    pub fn finish_times(self) -> (usize, Vec<i64>) {
        let mut me = self;
        drop(me.child.stdin.take());
        let mut times = Vec::new();
        let mut line = String::new();
        while me.lines.read_line(&mut line).unwrap_or(0) > 0 {
            if let Some((_, at)) = line.trim().split_once(' ') {
                times.push(at.parse().unwrap_or(0));
            }
            line.clear();
        }
        let _ = me.child.wait();
        (times.len(), times)
    }
}

pub struct ServerProcess {
    child: Child,
    pub base: String,
}

impl ServerProcess {
    pub async fn start(db_url: &str, extra: &[(String, String)]) -> ServerProcess {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut cmd = Command::new(posthorn_bin());
        cmd.arg("serve")
            .env("DATABASE_URL", db_url)
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .env("POSTHORN_ALLOW_PRIVATE_TARGETS", "true")
            // The benchmark measures the sender, not the plan's quota.
            .env(
                "POSTHORN_PLAN_LIMITS",
                "trial=1000000000,business=1000000000",
            )
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start posthorn serve");
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while client
            .get(format!("{base}/healthz"))
            .send()
            .await
            .map_or(true, |r| !r.status().is_success())
        {
            assert!(Instant::now() < deadline, "posthorn serve did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ServerProcess { child, base }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // SIGTERM, so it hands back what it holds; then wait.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}
