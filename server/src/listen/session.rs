//! The server's side of one `posthorn listen` connection: claim the session's due
//! attempts (at most [`WINDOW`] out at once), send each to the CLI signed as a real
//! endpoint's request, judge the CLI's answer by the HTTP rules, record the outcome.
//! What is out when the CLI goes away goes back to the queue, parked, for its return.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use app::{
    cfg::Config,
    core::classify::TransportError,
    db::{listen, queue},
};
use axum::extract::ws::{Message, WebSocket};
use chrono::{DateTime, Utc};
use futures::{SinkExt, StreamExt};
use rand::Rng;
use sqlx::PgPool;
use tokio::sync::Notify;

use super::protocol::{answer_of, FromCli, ToCli, WINDOW};
use crate::dispatcher::sender::{Sender, MAX_RESPONSE_BODY};

/// How long a claimed attempt is leased; renewed while the CLI is connected.
const LEASE: Duration = Duration::from_secs(120);
/// How often a session looks for due attempts while they come; an idle one looks less
/// and less often, down to once a second (thousands of idle sessions cost a few hundred
/// index lookups a second, and a developer's next event waits at most a second).
const POLL: Duration = Duration::from_millis(200);
const IDLE_POLL: Duration = Duration::from_secs(1);
/// How often a connected session pings its CLI, says it is alive and renews its leases.
pub const HEARTBEAT: Duration = Duration::from_secs(20);

/// One attempt out at the CLI.
struct Out {
    row: queue::Claimed,
    recorded: Vec<(String, String)>,
    started_at: DateTime<Utc>,
    sent: Instant,
}

/// Each attached endpoint's session: its generation, and how to end it.
type Attached = Mutex<HashMap<i64, (u64, Arc<Notify>)>>;

/// The session that holds each listen endpoint on this server: a new connection for an
/// endpoint ends the one before it (a laptop that dropped off and came back before the
/// server noticed), so one CLI gets the session's deliveries.
fn attached() -> &'static Attached {
    static ATTACHED: OnceLock<Attached> = OnceLock::new();
    ATTACHED.get_or_init(Default::default)
}

/// The signer and judge every session of this process shares (it never sends HTTP).
fn sender(cfg: &Arc<Config>) -> Option<&'static Sender> {
    static SENDER: OnceLock<Option<Sender>> = OnceLock::new();
    SENDER
        .get_or_init(|| Sender::new(cfg.clone(), Vec::new()).ok())
        .as_ref()
}

pub struct Session {
    pub pool: PgPool,
    pub cfg: Arc<Config>,
    pub project_id: i64,
    pub endpoint_id: i64,
    /// The session ends with its CLI (no `--name`).
    pub unnamed: bool,
    pub forward: Option<String>,
}

impl Session {
    pub async fn run(self, socket: WebSocket) {
        let Some(sender) = sender(&self.cfg) else {
            tracing::error!("listen: the signer could not be built");
            return;
        };
        let generation: u64 = rand::thread_rng().gen();
        let ended = Arc::new(Notify::new());
        if let Some((_, before)) = attached()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(self.endpoint_id, (generation, ended.clone()))
        {
            before.notify_one();
        }
        let worker = format!("listen-{}", ulid::Ulid::new());
        let mut out: HashMap<String, Out> = HashMap::new();
        let bye = self
            .exchange(socket, sender, &worker, &mut out, &ended)
            .await;
        let held: Vec<(i64, DateTime<Utc>)> =
            out.values().map(|o| (o.row.id, o.row.created_at)).collect();
        if let Err(e) = queue::listen::hand_back(&self.pool, &worker, &held).await {
            // Their leases expire and the session's next claim takes them again.
            tracing::warn!(error = %e, "listen: handing back failed");
        }
        {
            let mut map = attached().lock().unwrap_or_else(|e| e.into_inner());
            if map
                .get(&self.endpoint_id)
                .is_some_and(|(g, _)| *g == generation)
            {
                map.remove(&self.endpoint_id);
            }
        }
        let _ = listen::seen(&self.pool, self.endpoint_id, false, None).await;
        if bye && self.unnamed {
            let access = app::auth::system_access(self.project_id, "listen");
            if let Err(e) =
                app::use_cases::listen::close(&self.pool, &access, self.endpoint_id).await
            {
                tracing::warn!(error = %e, "listen: ending the session failed");
            }
        }
    }

    /// Runs the connection until the CLI leaves (true: it said goodbye), the socket
    /// breaks, or another connection takes the session over.
    async fn exchange(
        &self,
        socket: WebSocket,
        sender: &Sender,
        worker: &str,
        out: &mut HashMap<String, Out>,
        ended: &Notify,
    ) -> bool {
        let (mut sink, mut stream) = socket.split();
        if listen::seen(&self.pool, self.endpoint_id, true, self.forward.as_deref())
            .await
            .is_err()
        {
            return false;
        }
        let ready = ToCli::Ready {
            endpoint_id: self.endpoint_id,
        };
        if sink.send(text(&ready)).await.is_err() {
            return false;
        }
        let mut wait = POLL;
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        let answer_within = self.cfg.read_timeout + Duration::from_secs(5);
        loop {
            tokio::select! {
                _ = ended.notified() => return false,
                msg = stream.next() => match msg {
                    Some(Ok(Message::Text(t))) => match serde_json::from_str::<FromCli>(&t) {
                        Ok(FromCli::Bye) => return true,
                        Ok(FromCli::Answer { id, status, headers, body, error_kind, error, duration_ms }) => {
                            if let Some(o) = out.remove(&id) {
                                let answer = answer_of(status, headers, body, error_kind.as_deref(), error, MAX_RESPONSE_BODY);
                                let ms = i32::try_from(duration_ms).unwrap_or(i32::MAX).min(o.sent.elapsed().as_millis() as i32);
                                self.record(sender, worker, o, ms, answer).await;
                            }
                        }
                        Err(_) => return false,
                    },
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    _ => return false,
                },
                _ = heartbeat.tick() => {
                    // A ping keeps an idle connection open through load balancers that
                    // cut quiet ones, and tells the CLI the server is still there.
                    if sink.send(Message::Ping(Default::default())).await.is_err() {
                        return false;
                    }
                    let ids: Vec<i64> = out.values().map(|o| o.row.id).collect();
                    let _ = listen::seen(&self.pool, self.endpoint_id, true, None).await;
                    let _ = queue::renew_leases(&self.pool, worker, &ids, LEASE).await;
                }
                _ = tokio::time::sleep(wait) => {
                    let late: Vec<String> = out.iter()
                        .filter(|(_, o)| o.sent.elapsed() > answer_within)
                        .map(|(id, _)| id.clone())
                        .collect();
                    for id in late {
                        if let Some(o) = out.remove(&id) {
                            let ms = o.sent.elapsed().as_millis() as i32;
                            let timeout = Err((TransportError::Timeout, format!(
                                "posthorn listen: no answer within {} s", answer_within.as_secs())));
                            self.record(sender, worker, o, ms, timeout).await;
                        }
                    }
                    if out.len() >= WINDOW {
                        continue;
                    }
                    let room = (WINDOW - out.len()) as i64;
                    let claimed = match queue::listen::claim(&self.pool, self.endpoint_id, worker, room, LEASE).await {
                        Ok(rows) => rows,
                        Err(e) => {
                            tracing::warn!(error = %e, "listen: claim failed");
                            continue;
                        }
                    };
                    wait = if claimed.is_empty() && out.is_empty() { (wait * 2).min(IDLE_POLL) } else { POLL };
                    for row in claimed {
                        if let Some(msg) = self.send_one(sender, worker, row, out).await {
                            if sink.send(msg).await.is_err() {
                                return false;
                            }
                        }
                    }
                }
            }
        }
    }

    /// The message that carries one claimed attempt to the CLI (None: it was settled
    /// here, an erased event or a secret that does not open).
    async fn send_one(
        &self,
        sender: &Sender,
        worker: &str,
        row: queue::Claimed,
        out: &mut HashMap<String, Out>,
    ) -> Option<Message> {
        let jitter: f64 = rand::thread_rng().gen();
        if row.erased {
            self.write(worker, sender.erased(&row)).await;
            return None;
        }
        let prepared = match sender.prepare(&row, Utc::now().timestamp()) {
            Ok(p) => p,
            Err(e) => {
                self.write(worker, sender.internal_failure(&row, &e, jitter))
                    .await;
                return None;
            }
        };
        let msg = ToCli::Delivery {
            id: row.request_id.clone(),
            event_id: row.event_id.clone(),
            event_type: row.event_type.clone(),
            attempt: row.attempt,
            headers: prepared.headers,
            body: String::from_utf8_lossy(&prepared.body).into_owned(),
        };
        out.insert(
            row.request_id.clone(),
            Out {
                row,
                recorded: prepared.recorded,
                started_at: Utc::now(),
                sent: Instant::now(),
            },
        );
        Some(text(&msg))
    }

    async fn record(
        &self,
        sender: &Sender,
        worker: &str,
        o: Out,
        duration_ms: i32,
        answer: crate::dispatcher::sender::Answer,
    ) {
        let jitter: f64 = rand::thread_rng().gen();
        let outcome = sender.judge(
            &o.row,
            o.recorded,
            o.started_at,
            duration_ms,
            answer,
            jitter,
        );
        self.write(worker, outcome).await;
    }

    /// Records one outcome. If the database is away, the row stays leased; when the
    /// lease expires it is waiting again and this session (or the next) sends it again
    /// with the same request id.
    async fn write(&self, worker: &str, outcome: queue::Outcome) {
        let written = match self.pool.acquire().await {
            Ok(mut conn) => queue::record(&mut conn, worker, &[outcome]).await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "listen: recording an outcome failed");
        }
    }
}

fn text(msg: &ToCli) -> Message {
    Message::Text(serde_json::to_string(msg).unwrap_or_default().into())
}
