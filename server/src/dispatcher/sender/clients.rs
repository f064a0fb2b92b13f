//! The dispatcher's HTTP clients: how they are built (trust, timeouts, kept
//! connections, the target guard) and one per client certificate: reqwest presents an
//! identity per client, so an endpoint with a certificate gets its own (with its own kept
//! connections), made when its first attempt goes out and kept while the certificate
//! stays the same.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use app::{cfg::Config, core::sealed};
use reqwest::{redirect, Certificate, Client, ClientBuilder, Identity};

use crate::dispatcher::{egress, guard};

/// Builds the clients with the operator's settings.
pub struct Maker {
    connect_timeout: Duration,
    /// Idle connections kept per receiver: as many as attempts may be in flight, so a
    /// receiver behind many endpoints (one host) never closes connections it will need
    /// again at once, each a new TLS handshake.
    idle_per_host: usize,
    allow_private_targets: bool,
    /// The operator's extra roots (a corporate CA, say), beside the built-in web roots
    /// and the system's store (both added by reqwest's rustls features).
    roots: Vec<Certificate>,
    /// With `POSTHORN_EGRESS_PROXY`: the loopback proxy guarding it (see [`egress`]).
    pub egress: Option<egress::Guard>,
}

impl Maker {
    pub fn new(cfg: &Config) -> reqwest::Result<Maker> {
        Ok(Maker {
            connect_timeout: cfg.connect_timeout,
            idle_per_host: cfg.concurrency.max(64),
            allow_private_targets: cfg.allow_private_targets,
            roots: match cfg.extra_roots.as_deref() {
                Some(pem) => Certificate::from_pem_bundle(pem)?,
                None => Vec::new(),
            },
            egress: cfg.egress_proxy.clone().map(|upstream| {
                egress::Guard::start(upstream, cfg.allow_private_targets, cfg.connect_timeout)
                    .expect("a loopback port for the egress guard")
            }),
        })
    }

    /// No target guard: for Posthorn's own inspector bins, which are always allowed.
    pub fn base(&self) -> ClientBuilder {
        // No proxy from the environment: the target guard checks the address connected
        // to, which through a proxy would be the proxy's.
        let builder = Client::builder()
            .no_proxy()
            .redirect(redirect::Policy::none())
            .connect_timeout(self.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(self.idle_per_host)
            .tcp_nodelay(true)
            .user_agent(concat!("Posthorn-Webhooks/", env!("CARGO_PKG_VERSION")))
            .min_tls_version(reqwest::tls::Version::TLS_1_2);
        self.roots
            .iter()
            .fold(builder, |b, c| b.add_root_certificate(c.clone()))
    }

    /// For customers' endpoints: non-public addresses refused unless configured
    /// otherwise; presenting `identity` when given one.
    pub fn guarded(&self, identity: Option<Identity>) -> reqwest::Result<Client> {
        let mut builder = self.base();
        if let Some(egress) = &self.egress {
            builder = builder.proxy(reqwest::Proxy::all(&egress.url)?);
        } else if !self.allow_private_targets {
            builder = builder.dns_resolver(guard::resolver());
        }
        if let Some(identity) = identity {
            builder = builder.identity(identity);
        }
        builder.build()
    }
}

/// The clients for customers' endpoints: one shared by all, and one per client
/// certificate. Kept connections are bounded per receiver (64 idle, 60 s) and, across
/// every receiver, by the process's file descriptors: when more than half of its limit
/// is open (one tenant's thousands of endpoints on distinct hosts, say), every kept
/// connection is let go (fresh pools; attempts in flight finish on theirs), so sockets
/// kept for idle receivers never leave the process unable to open a new one.
pub struct Pools {
    pub maker: Arc<Maker>,
    shared: RwLock<Client>,
    pub identities: Identities,
}

impl Pools {
    pub fn new(maker: Arc<Maker>) -> reqwest::Result<Arc<Pools>> {
        let pools = Arc::new(Pools {
            shared: RwLock::new(maker.guarded(None)?),
            identities: Identities::new(maker.clone()),
            maker,
        });
        // Checked every 10 s while the dispatcher lives.
        let weak = Arc::downgrade(&pools);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let Some(pools) = weak.upgrade() else { return };
                if let Some((open, limit)) = descriptors() {
                    if crowded(open, limit) {
                        pools.let_go();
                        tracing::warn!(
                            open,
                            limit,
                            "many open connections: kept connections let go"
                        );
                    }
                }
            }
        });
        Ok(pools)
    }

    pub fn shared(&self) -> Client {
        self.shared
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Fresh pools for every client: the kept connections close once unused.
    pub fn let_go(&self) {
        if let Ok(fresh) = self.maker.guarded(None) {
            *self.shared.write().unwrap_or_else(|p| p.into_inner()) = fresh;
        }
        self.identities.clear();
    }
}

/// More than half of the descriptor limit is open.
pub fn crowded(open: usize, limit: usize) -> bool {
    open.saturating_mul(2) > limit
}

/// Open descriptors of this process and its soft limit (Linux; None elsewhere).
fn descriptors() -> Option<(usize, usize)> {
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count();
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line.split_whitespace().nth(3)?.parse().ok()?;
    Some((open, soft))
}

/// Clients kept at most; past it the oldest goes (its connections close). Bounded so
/// that many endpoints with certificates cannot grow the dispatcher without end.
pub const MOST_KEPT: usize = 256;

type Kept = (HashMap<i64, (String, Client)>, VecDeque<i64>);

pub struct Identities {
    maker: Arc<Maker>,
    /// By endpoint, with the sealed key they were made from (a new certificate, or a
    /// re-sealed key, makes a new client), oldest first.
    kept: Mutex<Kept>,
}

impl Identities {
    pub fn new(maker: Arc<Maker>) -> Identities {
        Identities {
            maker,
            kept: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }

    pub fn clear(&self) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.0.clear();
        kept.1.clear();
    }

    /// The client presenting `cert` with `sealed_key` for this endpoint.
    pub fn client(&self, endpoint: i64, cert: &str, sealed_key: &str) -> Result<Client, String> {
        {
            let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((key, client)) = kept.0.get(&endpoint) {
                if key == sealed_key {
                    return Ok(client.clone());
                }
            }
        }
        let key = sealed::open(sealed::CLIENT_KEY, sealed_key).map_err(|e| e.to_string())?;
        let mut pem = cert.as_bytes().to_vec();
        pem.push(b'\n');
        pem.extend_from_slice(key.as_bytes());
        let identity = Identity::from_pem(&pem).map_err(|e| e.to_string())?;
        let client = self
            .maker
            .guarded(Some(identity))
            .map_err(|e| e.to_string())?;
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *kept;
        if map
            .insert(endpoint, (sealed_key.to_string(), client.clone()))
            .is_none()
        {
            order.push_back(endpoint);
            while order.len() > MOST_KEPT {
                if let Some(old) = order.pop_front() {
                    map.remove(&old);
                }
            }
        }
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn connections_are_let_go_past_half_the_descriptor_limit() {
        assert!(!super::crowded(500, 1024));
        assert!(super::crowded(513, 1024));
        assert!(!super::crowded(0, 0) || super::crowded(1, 0));
        let (open, limit) = super::descriptors().expect("Linux /proc");
        assert!(open > 0 && limit >= open, "{open} of {limit}");
    }
}
