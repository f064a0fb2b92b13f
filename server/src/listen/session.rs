//! The server's side of one `posthorn listen` connection: claim the session's due
//! attempts (at most [`WINDOW`] out at once), send each to the CLI signed as a real
//! endpoint's request, judge the CLI's answer by the HTTP rules, record the outcome.
//! What is out when the CLI goes away goes back to the queue, parked, for its return.

use app::core::{AttemptId, EndpointId, ProjectId};
use std::{
    collections::HashMap,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use app::{
    cfg::Config,
    core::classify::TransportError,
    db::{listen, queue},
};
use axum::extract::ws::{Message, WebSocket};
use chrono::{DateTime, Utc};
use futures::{stream::SplitSink, SinkExt, StreamExt};
use rand::Rng;
use sqlx::PgPool;
use tokio::sync::Notify;

use super::{
    protocol::{answer_of, FromCli, ToCli, WINDOW},
    registry::{Attachment, Slot},
};
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
/// A CLI not heard from (not even a pong) for this long is gone.
const SILENCE: Duration = Duration::from_secs(50);

/// One attempt out at the CLI.
struct Out {
    row: queue::Claimed,
    recorded: Vec<(String, String)>,
    started_at: DateTime<Utc>,
    sent: Instant,
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
    pub project_id: ProjectId,
    pub endpoint_id: EndpointId,
    /// The session ends with its CLI (no `--name`).
    pub unnamed: bool,
    /// The project's connection slot on this server, held while the connection lives.
    pub slot: Slot,
}

impl Session {
    pub async fn run(self, socket: WebSocket) {
        let Some(sender) = sender(&self.cfg) else {
            tracing::error!("listen: the signer could not be built");
            return;
        };
        let attachment = Attachment::attach(self.endpoint_id);
        let worker = format!("listen-{}", ulid::Ulid::new());
        let mut out: HashMap<String, Out> = HashMap::new();
        let bye = self
            .exchange(socket, sender, &worker, &mut out, &attachment.ended)
            .await;
        let held: Vec<(AttemptId, DateTime<Utc>)> =
            out.values().map(|o| (o.row.id, o.row.created_at)).collect();
        if let Err(e) = queue::listen::hand_back(&self.pool, &worker, &held).await {
            // Their leases expire and the session's next claim takes them again.
            tracing::warn!(error = %e, "listen: handing back failed");
        }
        // A newer connection (here) has already said the CLI is connected.
        if attachment.is_current() {
            let _ = listen::seen(&self.pool, self.endpoint_id, false).await;
        }
        drop(attachment);
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
    /// breaks or falls silent, the session ends, or another connection takes it over.
    async fn exchange(
        &self,
        socket: WebSocket,
        sender: &Sender,
        worker: &str,
        out: &mut HashMap<String, Out>,
        ended: &Notify,
    ) -> bool {
        let (mut sink, mut stream) = socket.split();
        if listen::seen(&self.pool, self.endpoint_id, true)
            .await
            .is_err()
        {
            return false;
        }
        let ready = ToCli::Ready {
            endpoint_id: self.endpoint_id,
        };
        if !send(&mut sink, text(&ready)).await {
            return false;
        }
        let mut wait = POLL;
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        let mut last_heard = Instant::now();
        loop {
            tokio::select! {
                _ = ended.notified() => return false,
                msg = stream.next() => {
                    last_heard = Instant::now();
                    let text = match msg {
                        Some(Ok(Message::Text(t))) => t,
                        Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                        _ => return false,
                    };
                    match serde_json::from_str::<FromCli>(&text) {
                        Ok(FromCli::Bye) => return true,
                        Ok(answer) => self.on_answer(sender, worker, out, answer).await,
                        Err(_) => return false,
                    }
                }
                _ = heartbeat.tick() => {
                    // A ping keeps an idle connection open through load balancers that
                    // cut quiet ones; the CLI's pong says it is still there.
                    if !send(&mut sink, Message::Ping(Default::default())).await {
                        return false;
                    }
                    // A session deleted meanwhile (by its owner, or for idling) ends here.
                    let access = app::auth::system_access(self.project_id, "listen");
                    if !listen::is_session(&self.pool, &access, self.endpoint_id).await.unwrap_or(true) {
                        return false;
                    }
                    let ids: Vec<AttemptId> = out.values().map(|o| o.row.id).collect();
                    let _ = listen::seen(&self.pool, self.endpoint_id, true).await;
                    let _ = queue::renew_leases(&self.pool, worker, &ids, LEASE).await;
                }
                _ = tokio::time::sleep(wait) => {
                    // A CLI that answers nothing, not even a ping, is gone (a laptop that
                    // slept, a half-open connection): what is out goes back to the queue.
                    if last_heard.elapsed() > SILENCE {
                        return false;
                    }
                    self.settle_late(sender, worker, out, last_heard).await;
                    let claimed = self.claim(worker, out).await;
                    wait = if claimed.is_empty() && out.is_empty() { (wait * 2).min(IDLE_POLL) } else { POLL };
                    for row in claimed {
                        if let Some(msg) = self.send_one(sender, worker, row, out).await {
                            if !send(&mut sink, msg).await {
                                return false;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Records the outcome an answer reports (an answer for no attempt out is ignored).
    async fn on_answer(
        &self,
        sender: &Sender,
        worker: &str,
        out: &mut HashMap<String, Out>,
        answer: FromCli,
    ) {
        let FromCli::Answer {
            id,
            status,
            headers,
            body,
            error_kind,
            error,
            duration_ms,
        } = answer
        else {
            return;
        };
        if let Some(o) = out.remove(&id) {
            let answer = answer_of(
                status,
                headers,
                body,
                error_kind.as_deref(),
                error,
                MAX_RESPONSE_BODY,
            );
            let sent_ms = o.sent.elapsed().as_millis().min(i32::MAX as u128) as i32;
            let ms = i32::try_from(duration_ms).unwrap_or(i32::MAX).min(sent_ms);
            self.record(sender, worker, o, ms, answer).await;
        }
    }

    /// Attempts the CLI has not answered in time although it was heard from since they
    /// were sent (so the connection lives): timed out, as an HTTP delivery would be.
    async fn settle_late(
        &self,
        sender: &Sender,
        worker: &str,
        out: &mut HashMap<String, Out>,
        last_heard: Instant,
    ) {
        let answer_within = self.cfg.read_timeout + Duration::from_secs(5);
        let late: Vec<String> = out
            .iter()
            .filter(|(_, o)| o.sent.elapsed() > answer_within && last_heard > o.sent)
            .map(|(id, _)| id.clone())
            .collect();
        for id in late {
            if let Some(o) = out.remove(&id) {
                let ms = o.sent.elapsed().as_millis().min(i32::MAX as u128) as i32;
                let words = format!(
                    "posthorn listen: no answer within {} s",
                    answer_within.as_secs()
                );
                self.record(sender, worker, o, ms, Err((TransportError::Timeout, words)))
                    .await;
            }
        }
    }

    /// Due attempts for the room left in the window (none when it is full, or the claim
    /// fails: the next poll tries again).
    async fn claim(&self, worker: &str, out: &HashMap<String, Out>) -> Vec<queue::Claimed> {
        if out.len() >= WINDOW {
            return Vec::new();
        }
        let room = (WINDOW - out.len()) as i64;
        queue::listen::claim(&self.pool, self.endpoint_id, worker, room, LEASE)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "listen: claim failed");
                Vec::new()
            })
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
            event_id: row.of.event_id.clone(),
            event_type: row.of.event_type.clone(),
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

/// Sends one message; false when the socket is gone or takes more than 10 s to take it
/// (a CLI that stopped reading holds the session no longer).
async fn send(sink: &mut SplitSink<WebSocket, Message>, msg: Message) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(10), sink.send(msg)).await,
        Ok(Ok(()))
    )
}

fn text(msg: &ToCli) -> Message {
    Message::Text(serde_json::to_string(msg).unwrap_or_default().into())
}
