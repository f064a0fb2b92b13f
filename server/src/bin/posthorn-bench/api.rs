//! The benchmark through the public HTTP API, as a user gets it: a real `posthorn serve`
//! process, events sent to `POST /public/v1/events` at a fixed pace, and a receiver in a
//! process of its own (`posthorn-bench receiver`), receipts matched to sends by their
//! `webhook-id`.
//!
//! Latency is measured from each event's *intended* send time (the pace's schedule), so a
//! slow answer delays no later measurement (no coordinated omission); the receiver stamps
//! each receipt with the wall clock both processes share.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Read, Write},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, Router};
use sqlx::PgPool;

/// The `posthorn` binary measured: beside this one, or `POSTHORN_BIN` (an earlier build,
/// for before/after figures; it migrates its own database).
fn posthorn_bin() -> std::path::PathBuf {
    std::env::var_os("POSTHORN_BIN")
        .map(Into::into)
        .unwrap_or_else(|| std::env::current_exe().unwrap().with_file_name("posthorn"))
}

/// An empty scratch database; its URL and a pool on it.
async fn empty_db() -> (PgPool, String) {
    let admin_url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let admin = PgPool::connect(&admin_url).await.unwrap();
    let name = format!("ph_bench_api_{}", std::process::id());
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        sqlx::query(&sql).execute(&admin).await.unwrap();
    }
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&format!("/{name}"));
    let pool = app::db::connect(url.as_str(), 8).await.unwrap();
    (pool, url.to_string())
}

/// `posthorn <args>` on the scratch database; its standard output.
fn posthorn(db_url: &str, args: &[&str]) -> String {
    let out = Command::new(posthorn_bin())
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run posthorn");
    assert!(out.status.success(), "posthorn {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where waiting attempts live in the build measured: the queue table, or (builds before
/// it) the deliveries table itself.
async fn queue_table(pool: &PgPool) -> &'static str {
    let split: Option<String> = sqlx::query_scalar("SELECT to_regclass('delivery_queue')::text")
        .fetch_one(pool)
        .await
        .unwrap_or(None);
    match split {
        Some(_) => "delivery_queue",
        None => "deliveries",
    }
}

fn unix_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

// ---------------------------------------------------------------------------------------
// The receiver process.

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

struct ReceiverProcess {
    child: Child,
    lines: BufReader<std::process::ChildStdout>,
    port: u16,
}

impl ReceiverProcess {
    fn start() -> ReceiverProcess {
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
    fn finish(mut self) -> (HashMap<String, i64>, usize) {
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
}

// ---------------------------------------------------------------------------------------
// The server process.

struct ServerProcess {
    child: Child,
    base: String,
}

impl ServerProcess {
    async fn start(db_url: &str, extra: &[(String, String)]) -> ServerProcess {
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

    fn pid(&self) -> u32 {
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

// ---------------------------------------------------------------------------------------
// CPU accounting from /proc: the machine's, and per process.

const TICKS_PER_SECOND: f64 = 100.0;

fn machine_busy_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let cpu: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    cpu.iter().take(8).sum::<u64>() - cpu.get(3).unwrap_or(&0) - cpu.get(4).unwrap_or(&0)
}

/// utime + stime of every process, grouped: this benchmark, posthorn, the receiver,
/// PostgreSQL (all its backends), other.
fn process_ticks(server: u32, receiver: u32) -> HashMap<&'static str, u64> {
    let me = std::process::id();
    let mut out: HashMap<&'static str, u64> = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = &stat[stat.find('(').unwrap_or(0) + 1..close];
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
            + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
        let group = match pid {
            p if p == me => "load generator",
            p if p == server => "posthorn serve",
            p if p == receiver => "receiver",
            _ if comm.starts_with("postgres") || comm.starts_with("postmaster") => "postgresql",
            _ => "other",
        };
        *out.entry(group).or_default() += ticks;
    }
    out
}

struct CpuSample {
    at: Instant,
    machine: u64,
    by: HashMap<&'static str, u64>,
}

impl CpuSample {
    fn take(server: u32, receiver: u32) -> CpuSample {
        CpuSample {
            at: Instant::now(),
            machine: machine_busy_ticks(),
            by: process_ticks(server, receiver),
        }
    }

    /// Machine CPU ms per unit of work between two samples, and the split by process.
    fn report(&self, later: &CpuSample, units: u64, unit: &str) {
        let units = units.max(1) as f64;
        let ms = |ticks: u64| ticks as f64 * 1000.0 / TICKS_PER_SECOND;
        let machine = ms(later.machine.saturating_sub(self.machine));
        let secs = (later.at - self.at).as_secs_f64();
        println!(
            "machine CPU: {:.3} ms per {unit} ({:.0} % of the 2 cores over {secs:.1} s)",
            machine / units,
            machine / secs / 10.0 / 2.0
        );
        let mut groups: Vec<_> = later.by.keys().copied().collect();
        groups.sort();
        for g in groups {
            let d = later.by[g].saturating_sub(*self.by.get(g).unwrap_or(&0));
            println!("  {g:>15}: {:.3} ms per {unit}", ms(d) / units);
        }
    }
}

/// Commits in the scratch database and WAL flushes of the whole cluster, for "per
/// event" figures (the statistics lag by up to half a second; runs are long).
async fn pg_counters(pool: &PgPool) -> (i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
                (SELECT wal_sync FROM pg_stat_wal)",
    )
    .fetch_one(pool)
    .await
    .unwrap_or((0, 0))
}

/// Starts counting statements in the scratch database afresh when the cluster preloads
/// `pg_stat_statements`; false (and nothing is printed later) when it does not.
async fn statements_reset(pool: &PgPool) -> bool {
    sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(pool)
        .await
        .is_ok()
        && sqlx::query("SELECT pg_stat_statements_reset()")
            .execute(pool)
            .await
            .is_ok()
}

/// The statements that cost the database most, per unit of work: calls, and ms spent
/// executing and planning (planning is counted when `pg_stat_statements.track_planning`
/// is on). The benchmark's own polling shows up here too, and is labelled by its text.
async fn statements_report(pool: &PgPool, counting: bool, units: u64, unit: &str) {
    if !counting {
        return;
    }
    let rows: Vec<(i64, f64, f64, String)> = sqlx::query_as(
        "SELECT calls, total_exec_time, total_plan_time,
                left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
         FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         ORDER BY total_exec_time + total_plan_time DESC LIMIT 12",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    let units = units.max(1) as f64;
    println!("statements by database time, per {unit}: calls | ms executing | ms planning | text");
    for (calls, exec, plan, text) in rows {
        println!(
            "  {:>6.3} | {:>6.3} | {:>6.3} | {text}",
            calls as f64 / units,
            exec / units,
            plan / units
        );
    }
}

// ---------------------------------------------------------------------------------------
// The rig: scratch database, server, receiver, a project with a key.

pub struct Rig {
    pool: PgPool,
    db_url: String,
    server: ServerProcess,
    receiver: ReceiverProcess,
    client: reqwest::Client,
    key: String,
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
    fn project(db_url: &str) -> String {
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
        let r: serde_json::Value = self
            .client
            .post(format!("{}/public/v1/webhooks", self.server.base))
            .bearer_auth(key)
            .json(&serde_json::json!({ "url": url, "events": ["*"] }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["id"].as_i64().unwrap_or_else(|| panic!("endpoint: {r}"))
    }

    /// Sends one event (with the ordering key `key-{i % keys}` when `keys` > 0); returns
    /// its id.
    async fn send(
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
    async fn send_batch(client: &reqwest::Client, base: &str, key: &str, i: u64, n: u64) -> u64 {
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
    async fn paced(&self, key: &str, rate: u64, seconds: u64) -> (Vec<(String, i64)>, u64) {
        self.paced_keyed(key, rate, seconds, 0).await
    }

    /// [`Self::paced`], the events spread over `keys` ordering keys.
    async fn paced_keyed(
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
    async fn wait_received(&self, n: u64, within: Duration) {
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

    async fn wait_for(&self, sql: &str, until: impl Fn(i64) -> bool, within: Duration) {
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

    fn cpu(&self) -> CpuSample {
        CpuSample::take(self.server.pid(), self.receiver.child.id())
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// What waits beside the measured project, to show it costs that project nothing.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Backlog {
    None,
    /// Attempts held by a disabled endpoint (what auto-disable leaves).
    Held,
    /// Due attempts queued behind an endpoint that answers in 1 s.
    Deep,
}

/// Another project's endpoint with `rows` attempts: held (then disabled) or due (slow).
async fn make_backlog(rig: &Rig, kind: Backlog, rows: i64) {
    if matches!(kind, Backlog::None) || rows == 0 {
        return;
    }
    let key = Rig::project(&rig.db_url);
    let url = rig.receiver_url("/slow");
    let endpoint = rig.endpoint(&key, &url).await;
    let (project, event): (i64, String) = {
        let id = Rig::send(&rig.client, &rig.server.base, &key, 0, 0)
            .await
            .expect("backlog event");
        sqlx::query_as("SELECT project_id, event_id FROM events WHERE event_id = $1")
            .bind(&id)
            .fetch_one(&rig.pool)
            .await
            .unwrap()
    };
    let started = Instant::now();
    let queue = queue_table(&rig.pool).await;
    sqlx::query(&format!(
        "INSERT INTO {queue} (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                              trigger, status, scheduled_at, request_id)
         SELECT $1, $2, 'order.paid', $3, $4, 1, 'auto', 'pending',
                now() - interval '1 hour' + g * interval '1 ms', 'req_backlog_' || g
         FROM generate_series(1, $5) g",
    ))
    .bind(project)
    .bind(&event)
    .bind(endpoint)
    .bind(&url)
    .bind(rows)
    .execute(&rig.pool)
    .await
    .unwrap();
    if matches!(kind, Backlog::Held) {
        let r = rig
            .client
            .patch(format!("{}/public/v1/webhooks/{endpoint}", rig.server.base))
            .bearer_auth(&key)
            .json(&serde_json::json!({ "enabled": false }))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "disable: {}", r.status());
    }
    // As autovacuum would within a minute of such a change.
    sqlx::query(&format!("VACUUM ANALYZE {queue}"))
        .execute(&rig.pool)
        .await
        .unwrap();
    // A backlog grows over hours and its pages reach the disk meanwhile; written in
    // seconds here, they would otherwise be flushed by a checkpoint during the
    // measurement (seen as twice the WAL flushes per event and a slower p99).
    sqlx::query("CHECKPOINT").execute(&rig.pool).await.unwrap();
    println!(
        "backlog: {rows} {} attempts of another project in {:.1} s",
        match kind {
            Backlog::Held => "held (endpoint disabled)",
            _ => "due, behind a 1 s endpoint",
        },
        started.elapsed().as_secs_f64()
    );
}

/// Ingest → receipt latency through the public API, one endpoint.
pub async fn latency(
    rate: u64,
    seconds: u64,
    backlog: Backlog,
    (rows, keys): (i64, u64),
    env: Vec<(String, String)>,
) {
    let rig = Rig::start(&env).await;
    let url = rig.receiver_url("/hook");
    rig.endpoint(&rig.key, &url).await;
    make_backlog(&rig, backlog, rows).await;
    // Warm the connections and caches, unmeasured.
    rig.paced(&rig.key, rate.min(100), 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rig.cpu();
    let counters = pg_counters(&rig.pool).await;
    let counting = statements_reset(&rig.pool).await;
    let (sent, refused) = rig.paced_keyed(&rig.key, rate, seconds, keys).await;
    let ids: Vec<&str> = sent.iter().map(|(id, _)| id.as_str()).collect();
    rig.wait_for(
        "SELECT count(*) FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
         WHERE d.status IN ('pending', 'in_flight') AND e.url LIKE '%/hook'",
        |n| n == 0,
        Duration::from_secs(30),
    )
    .await;
    let after = rig.cpu();
    let counters_after = pg_counters(&rig.pool).await;
    statements_report(&rig.pool, counting, sent.len() as u64, "event").await;
    let Rig {
        receiver, server, ..
    } = rig;
    drop(server);
    let (first, _) = receiver.finish();
    let mut lat: Vec<f64> = sent
        .iter()
        .filter_map(|(id, at)| first.get(id).map(|r| (r - at) as f64 / 1000.0))
        .collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{rate} events/s for {seconds} s through POST /public/v1/events{}: {} accepted, {refused} refused, {} received",
        match keys {
            0 => String::new(),
            n => format!(" over {n} ordering keys"),
        },
        ids.len(),
        lat.len()
    );
    println!(
        "intended send → receipt: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&lat, 0.50),
        percentile(&lat, 0.90),
        percentile(&lat, 0.99),
        percentile(&lat, 1.0)
    );
    let events = ids.len() as i64;
    println!(
        "PostgreSQL: {:.2} commits and {:.2} WAL flushes per event",
        (counters_after.0 - counters.0) as f64 / events.max(1) as f64,
        (counters_after.1 - counters.1) as f64 / events.max(1) as f64
    );
    before.report(&after, lat.len() as u64, "delivery");
}

/// Deliveries per second with `endpoints` endpoints per event, offered at `rate` events/s.
pub async fn fanout(endpoints: usize, rate: u64, seconds: u64, env: Vec<(String, String)>) {
    let rig = Rig::start(&env).await;
    let url = rig.receiver_url("/hook");
    for _ in 0..endpoints {
        rig.endpoint(&rig.key, &url).await;
    }
    let before = rig.cpu();
    let counting = statements_reset(&rig.pool).await;
    let started = unix_micros();
    let (sent, refused) = rig.paced(&rig.key, rate, seconds).await;
    let expected = sent.len() as i64 * endpoints as i64;
    rig.wait_received(expected as u64, Duration::from_secs(120))
        .await;
    // Then the last outcomes' writes, so their CPU counts too.
    rig.wait_for(
        "SELECT count(*) FROM deliveries WHERE status = 'succeeded'",
        |n| n >= expected,
        Duration::from_secs(120),
    )
    .await;
    let after = rig.cpu();
    statements_report(&rig.pool, counting, expected as u64, "delivery").await;
    let Rig {
        receiver, server, ..
    } = rig;
    drop(server);
    let (_, all) = receiver.finish_times();
    // Receipts per second in 5-second windows; the steady part skips the first 10 s.
    let mut per_window: HashMap<i64, u64> = HashMap::new();
    for at in &all {
        *per_window.entry((at - started) / 5_000_000).or_default() += 1;
    }
    let last = (seconds as i64) / 5;
    let mut steady: Vec<f64> = (2..last)
        .map(|w| *per_window.get(&w).unwrap_or(&0) as f64 / 5.0)
        .collect();
    steady.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let end = all.iter().max().copied().unwrap_or(started);
    println!(
        "{endpoints} endpoints per event, {rate} events/s offered for {seconds} s: {} accepted, {refused} refused",
        sent.len()
    );
    println!(
        "received {} of {expected} deliveries; steady 5-s windows: median {:.0}/s (min {:.0}, max {:.0}); all received after {:.1} s: {:.0}/s end to end",
        all.len(),
        percentile(&steady, 0.5),
        percentile(&steady, 0.0),
        percentile(&steady, 1.0),
        (end - started) as f64 / 1e6,
        all.len() as f64 / ((end - started) as f64 / 1e6)
    );
    before.report(&after, all.len() as u64, "delivery");
}

/// Events accepted per second by `POST /public/v1/events` with `concurrency` clients
/// sending back to back (closed loop), one endpoint subscribed; with `batch` > 1, that
/// many events per `POST /public/v1/events/batch`. Then waits for every delivery, so the
/// CPU figure covers an event's ingest and its delivery.
pub async fn ingest(concurrency: usize, seconds: u64, batch: u64, env: Vec<(String, String)>) {
    let rig = Rig::start(&env).await;
    let url = rig.receiver_url("/hook");
    rig.endpoint(&rig.key, &url).await;
    let before = rig.cpu();
    let counting = statements_reset(&rig.pool).await;
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..concurrency {
        let (client, base, key) = (rig.client.clone(), rig.server.base.clone(), rig.key.clone());
        tasks.spawn(async move {
            let (mut ok, mut i) = (0u64, c as u64 * 1_000_000_000);
            while Instant::now() < until {
                ok += match batch {
                    1 => Rig::send(&client, &base, &key, i, 0).await.map_or(0, |_| 1),
                    n => Rig::send_batch(&client, &base, &key, i, n).await,
                };
                i += batch;
            }
            ok
        });
    }
    let mut accepted = 0;
    while let Some(n) = tasks.join_next().await {
        accepted += n.unwrap();
    }
    let sending = started.elapsed().as_secs_f64();
    let delivered_then: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE status = 'succeeded'")
            .fetch_one(&rig.pool)
            .await
            .unwrap_or(0);
    rig.wait_received(accepted, Duration::from_secs(300)).await;
    rig.wait_for(
        "SELECT count(*) FROM deliveries WHERE status = 'succeeded'",
        |n| n >= accepted as i64,
        Duration::from_secs(30),
    )
    .await;
    let all_delivered = started.elapsed().as_secs_f64();
    let after = rig.cpu();
    statements_report(&rig.pool, counting, accepted, "event").await;
    let Rig {
        receiver, server, ..
    } = rig;
    drop(server);
    let (received, _) = receiver.finish_times();
    println!(
        "{concurrency} clients, {batch} event(s) per request, for {seconds} s: {accepted} events accepted ({:.0}/s); {delivered_then} delivered by then; all {received} delivered after {all_delivered:.1} s ({:.0}/s end to end)",
        accepted as f64 / sending,
        received as f64 / all_delivered,
    );
    before.report(&after, accepted, "event (ingest and its delivery)");
}

impl ReceiverProcess {
    /// Stops it and returns every receipt's time.
    fn finish_times(self) -> (usize, Vec<i64>) {
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
