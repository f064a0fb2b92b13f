//! Publishing to brokers (SPEC "Destinations"): the same attempt as an HTTP delivery
//! (body and signed headers), carried by the broker's own protocol. Connections are kept
//! per endpoint and reused, at most [`IDLE_PER_ENDPOINT`] idle per endpoint and
//! [`IDLE_TOTAL`] in all, and closed after [`IDLE_FOR`] unused. How many are open at once
//! for one endpoint is bounded by its share of requests in flight, like its HTTP requests.
//!
//! The clients are small and written here on purpose: a publish needs a handful of
//! commands, and every read from a tenant's broker is bounded ([`wire::MAX_FRAME`]) and
//! timed, which general clients do not promise.

use std::{
    collections::HashMap,
    hash::{Hash, Hasher},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use app::{
    cfg::Config,
    core::{
        classify::TransportError,
        destination::{Credentials, Settings},
        sealed, EndpointId,
    },
    db::queue::Claimed,
};

mod amqp;
mod mqtt;
mod nats;
mod redis;
mod wire;

/// Why a publish did not happen: a refusal that will not change by itself (dead-lettered
/// at once), or a failure of the connection (retried).
#[derive(Debug)]
pub enum Failure {
    Refused(String),
    Transport(TransportError, String),
}

pub const IDLE_PER_ENDPOINT: usize = 8;
pub const IDLE_TOTAL: usize = 512;
pub const IDLE_FOR: Duration = Duration::from_secs(60);

enum Conn {
    Redis(redis::Conn),
    Nats(nats::Conn),
    Mqtt(mqtt::Conn),
    Amqp(amqp::Conn),
}

/// An endpoint's connections, for one version of its settings and credentials: a change
/// of either opens new ones.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    endpoint: EndpointId,
    version: u64,
}

#[derive(Default)]
struct Idle {
    by_key: HashMap<Key, Vec<(Conn, Instant)>>,
    count: usize,
}

pub struct Brokers {
    idle: Arc<Mutex<Idle>>,
    cfg: Arc<Config>,
}

impl Brokers {
    pub fn new(cfg: Arc<Config>) -> Brokers {
        let idle: Arc<Mutex<Idle>> = Arc::default();
        // Idle connections are closed in the background, whether or not anything is sent.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let weak = Arc::downgrade(&idle);
            rt.spawn(async move {
                let mut tick = tokio::time::interval(IDLE_FOR / 2);
                loop {
                    tick.tick().await;
                    let Some(idle) = weak.upgrade() else { break };
                    sweep(&mut idle.lock().unwrap_or_else(|p| p.into_inner()));
                }
            });
        }
        Brokers { idle, cfg }
    }

    /// Publishes one attempt's message: what the broker acknowledged, in words, or why not.
    pub async fn publish(
        &self,
        row: &Claimed,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<String, Failure> {
        let internal = |e: String| Failure::Transport(TransportError::Other, e);
        let settings: Settings = row
            .destination_settings
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .ok_or_else(|| {
                internal(format!("no settings for destination `{}`", row.destination))
            })?;
        let creds: Option<Credentials> = match row.destination_credentials.as_deref() {
            None => None,
            Some(stored) => {
                let slot =
                    sealed::DESTINATION_CREDENTIALS.of(row.of.project_id, row.of.endpoint_id);
                let json = sealed::open(slot, stored).map_err(|e| internal(e.to_string()))?;
                Some(serde_json::from_str(&json).map_err(|e| internal(e.to_string()))?)
            }
        };
        let key = Key {
            endpoint: row.of.endpoint_id,
            version: version(&settings, row.destination_credentials.as_deref()),
        };
        let timeout = self.cfg.read_timeout;
        // A kept connection the broker has closed meanwhile fails at once: the message is
        // then sent once more on a new one.
        if let Some(conn) = self.take(key) {
            match self
                .send(conn, &settings, row, headers, body, timeout)
                .await
            {
                Ok((conn, answer)) => {
                    self.put(key, conn);
                    return Ok(answer);
                }
                Err(Failure::Transport(TransportError::Other, _)) => {}
                Err(other) => return Err(other),
            }
        }
        let conn = tokio::time::timeout(timeout, self.open(&settings, creds.as_ref()))
            .await
            .map_err(|_| {
                Failure::Transport(
                    TransportError::Timeout,
                    format!(
                        "the broker did not accept the connection within {} ms",
                        timeout.as_millis()
                    ),
                )
            })??;
        let (conn, answer) = self
            .send(conn, &settings, row, headers, body, timeout)
            .await?;
        self.put(key, conn);
        Ok(answer)
    }

    async fn open(
        &self,
        settings: &Settings,
        creds: Option<&Credentials>,
    ) -> Result<Conn, Failure> {
        let address = settings
            .address()
            .map_err(|e| Failure::Refused(format!("the destination's URL: {e}")))?;
        let io = wire::connect(
            &address,
            self.cfg.allow_private_targets,
            self.cfg.connect_timeout,
            self.cfg.egress_proxy.as_ref(),
        )
        .await?;
        Ok(match settings {
            Settings::Redis { .. } => Conn::Redis(redis::Conn::open(io, creds, address.db).await?),
            Settings::Nats { .. } => Conn::Nats(nats::Conn::open(io, creds).await?),
            Settings::Mqtt { .. } => Conn::Mqtt(mqtt::Conn::open(io, creds).await?),
            Settings::Rabbitmq { .. } => {
                Conn::Amqp(amqp::Conn::open(io, creds, &address.vhost).await?)
            }
        })
    }

    /// One publish within `timeout`; the connection comes back only when it is fit to
    /// be used again.
    async fn send(
        &self,
        mut conn: Conn,
        settings: &Settings,
        row: &Claimed,
        headers: &[(String, String)],
        body: &[u8],
        timeout: Duration,
    ) -> Result<(Conn, String), Failure> {
        let publish = async {
            match (&mut conn, settings) {
                (Conn::Redis(c), Settings::Redis { stream, maxlen, .. }) => {
                    c.xadd(stream, *maxlen, headers, body).await
                }
                (Conn::Nats(c), Settings::Nats { subject, .. }) => {
                    c.publish(subject, &row.request_id, headers, body).await
                }
                (Conn::Mqtt(c), Settings::Mqtt { topic, qos, .. }) => {
                    c.publish(topic, *qos, headers, body).await
                }
                (
                    Conn::Amqp(c),
                    Settings::Rabbitmq {
                        exchange,
                        routing_key,
                        ..
                    },
                ) => {
                    c.publish(exchange, routing_key, &row.request_id, headers, body)
                        .await
                }
                _ => Err(Failure::Transport(
                    TransportError::Other,
                    "a connection of another type".into(),
                )),
            }
        };
        match tokio::time::timeout(timeout, publish).await {
            Ok(Ok(answer)) => Ok((conn, answer)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Failure::Transport(
                TransportError::Timeout,
                format!(
                    "no answer from the broker within {} ms",
                    timeout.as_millis()
                ),
            )),
        }
    }

    fn take(&self, key: Key) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let list = idle.by_key.get_mut(&key)?;
        let (mut found, mut taken) = (None, 0);
        while let Some((conn, since)) = list.pop() {
            taken += 1;
            if since.elapsed() < IDLE_FOR {
                found = Some(conn);
                break;
            }
        }
        if list.is_empty() {
            idle.by_key.remove(&key);
        }
        idle.count = idle.count.saturating_sub(taken);
        found
    }

    fn put(&self, key: Key, conn: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.count >= IDLE_TOTAL {
            return; // closed: dropped here
        }
        let list = idle.by_key.entry(key).or_default();
        if list.len() < IDLE_PER_ENDPOINT {
            list.push((conn, Instant::now()));
            idle.count += 1;
        }
    }
}

fn sweep(idle: &mut Idle) {
    for list in idle.by_key.values_mut() {
        list.retain(|(_, since)| since.elapsed() < IDLE_FOR);
    }
    idle.by_key.retain(|_, list| !list.is_empty());
    idle.count = idle.by_key.values().map(Vec::len).sum();
}

fn version(settings: &Settings, credentials: Option<&str>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    settings.hash(&mut h);
    credentials.hash(&mut h);
    h.finish()
}
