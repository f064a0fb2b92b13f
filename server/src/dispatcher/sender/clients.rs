//! The dispatcher's HTTP clients: how they are built (trust, timeouts, kept
//! connections, the target guard) and one per client certificate: reqwest presents an
//! identity per client, so an endpoint with a certificate gets its own (with its own kept
//! connections), made when its first attempt goes out and kept while the certificate
//! stays the same.

use app::core::{EndpointId, ProjectId};
use std::{
    collections::HashMap,
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
    /// The operator's extra roots (a corporate CA, say) and the system's store, beside
    /// the built-in web roots. The system's store is read here, once per process: left to
    /// reqwest it is read again for every client made (one per client certificate).
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
            }
            .into_iter()
            .chain(system_roots())
            .collect(),
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
            .tls_built_in_native_certs(false)
            .min_tls_version(reqwest::tls::Version::TLS_1_2)
            // Every new connection counted for /metrics (pool churn, TLS handshakes).
            .connector_layer(tower::util::MapRequestLayer::new(count_connection));
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

/// The system's trust store (what reqwest's native roots would read), parsed once.
fn system_roots() -> Vec<Certificate> {
    let found = rustls_native_certs::load_native_certs();
    for e in &found.errors {
        tracing::warn!(error = %e, "the system trust store: a certificate was not read");
    }
    // Only those rustls takes as roots: one it cannot parse would fail every client.
    found
        .certs
        .into_iter()
        .filter(|der| rustls::RootCertStore::empty().add(der.clone()).is_ok())
        .filter_map(|der| Certificate::from_der(der.as_ref()).ok())
        .collect()
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

/// Clients kept at most, and per project: past either, the least recently used goes (of
/// the project, or of the project keeping the most), so no tenant's endpoints, however
/// many, push another tenant's clients out or grow the dispatcher without end.
pub const MOST_KEPT: usize = 256;
pub const MOST_KEPT_PER_PROJECT: usize = 128;

/// The bookkeeping of kept values (clients), by endpoint: which project, made from which
/// sealed key, when last used.
struct Kept<V> {
    by_endpoint: HashMap<EndpointId, Entry<V>>,
    clock: u64,
}

struct Entry<V> {
    project: ProjectId,
    key: String,
    value: V,
    used: u64,
}

impl<V: Clone> Kept<V> {
    fn new() -> Self {
        Kept {
            by_endpoint: HashMap::new(),
            clock: 0,
        }
    }

    /// The value for this endpoint and key, marked used.
    fn get(&mut self, endpoint: EndpointId, key: &str) -> Option<V> {
        self.clock += 1;
        let entry = self
            .by_endpoint
            .get_mut(&endpoint)
            .filter(|e| e.key == key)?;
        entry.used = self.clock;
        Some(entry.value.clone())
    }

    fn put(&mut self, project: ProjectId, endpoint: EndpointId, key: &str, value: V) {
        self.clock += 1;
        self.by_endpoint.remove(&endpoint);
        if self.count(project) >= MOST_KEPT_PER_PROJECT {
            self.evict(project);
        }
        if self.by_endpoint.len() >= MOST_KEPT {
            // Counting the one coming in: a project at the top gives way itself.
            let mut per: HashMap<ProjectId, usize> = HashMap::from([(project, 1)]);
            for e in self.by_endpoint.values() {
                *per.entry(e.project).or_default() += 1;
            }
            let largest = per
                .iter()
                .max_by_key(|(p, n)| (**n, **p == project, **p))
                .map(|(p, _)| *p);
            if let Some(largest) = largest {
                self.evict(largest);
            }
        }
        self.by_endpoint.insert(
            endpoint,
            Entry {
                project,
                key: key.to_string(),
                value,
                used: self.clock,
            },
        );
    }

    fn count(&self, project: ProjectId) -> usize {
        self.by_endpoint
            .values()
            .filter(|e| e.project == project)
            .count()
    }

    /// Drops the project's least recently used value.
    fn evict(&mut self, project: ProjectId) {
        let oldest = self
            .by_endpoint
            .iter()
            .filter(|(_, e)| e.project == project)
            .min_by_key(|(_, e)| e.used)
            .map(|(id, _)| *id);
        if let Some(id) = oldest {
            self.by_endpoint.remove(&id);
        }
    }
}

pub struct Identities {
    maker: Arc<Maker>,
    /// By endpoint, with the sealed key they were made from (a new certificate, or a
    /// re-sealed key, makes a new client).
    kept: Mutex<Kept<Client>>,
}

impl Identities {
    pub fn new(maker: Arc<Maker>) -> Identities {
        Identities {
            maker,
            kept: Mutex::new(Kept::new()),
        }
    }

    pub fn clear(&self) {
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_endpoint
            .clear();
    }

    /// The client presenting `cert` with `sealed_key` for this endpoint of `project`.
    pub fn client(
        &self,
        project: ProjectId,
        endpoint: EndpointId,
        cert: &str,
        sealed_key: &str,
    ) -> Result<Client, String> {
        if let Some(client) = self
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(endpoint, sealed_key)
        {
            return Ok(client);
        }
        let key = sealed::open(sealed::CLIENT_KEY.of(project, endpoint), sealed_key)
            .map_err(|e| e.to_string())?;
        let mut pem = cert.as_bytes().to_vec();
        pem.push(b'\n');
        pem.extend_from_slice(key.as_bytes());
        let identity = Identity::from_pem(&pem).map_err(|e| e.to_string())?;
        let client = self
            .maker
            .guarded(Some(identity))
            .map_err(|e| e.to_string())?;
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).put(
            project,
            endpoint,
            sealed_key,
            client.clone(),
        );
        Ok(client)
    }
}

/// Counts a connection a pool opens (each to an https receiver is a TLS handshake).
fn count_connection<R>(request: R) -> R {
    crate::metrics::CONNECTIONS_OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    request
}

#[cfg(test)]
mod tests {
    use app::core::{EndpointId, ProjectId};

    #[test]
    fn connections_are_let_go_past_half_the_descriptor_limit() {
        assert!(!super::crowded(500, 1024));
        assert!(super::crowded(513, 1024));
        assert!(!super::crowded(0, 0) || super::crowded(1, 0));
        let (open, limit) = super::descriptors().expect("Linux /proc");
        assert!(open > 0 && limit >= open, "{open} of {limit}");
    }

    #[test]
    fn one_tenant_cycling_many_certificates_keeps_no_other_tenant_out() {
        let mut kept = super::Kept::new();
        kept.put(ProjectId::new(2), EndpointId::new(9_000), "k", 0u32);
        // Tenant 1 goes round 300 endpoints with certificates, twice; tenant 2's one
        // endpoint sends between its attempts and stays kept throughout.
        for round in 0..2 {
            for endpoint in 0..300 {
                if kept.get(EndpointId::new(endpoint), "k").is_none() {
                    kept.put(ProjectId::new(1), EndpointId::new(endpoint), "k", round);
                }
                assert_eq!(
                    kept.get(EndpointId::new(9_000), "k"),
                    Some(0),
                    "evicted at {endpoint}"
                );
            }
        }
        assert_eq!(kept.count(ProjectId::new(1)), super::MOST_KEPT_PER_PROJECT);
        // A changed key is a miss; the least recently used of a project goes first.
        assert_eq!(kept.get(EndpointId::new(9_000), "other"), None);
        let mut kept = super::Kept::new();
        for endpoint in 0..super::MOST_KEPT_PER_PROJECT as i64 {
            kept.put(ProjectId::new(1), EndpointId::new(endpoint), "k", ());
        }
        kept.get(EndpointId::new(0), "k");
        kept.put(ProjectId::new(1), EndpointId::new(999), "k", ());
        assert!(
            kept.get(EndpointId::new(0), "k").is_some()
                && kept.get(EndpointId::new(1), "k").is_none()
        );
    }

    #[test]
    fn past_the_total_the_project_keeping_most_gives_way() {
        let mut kept = super::Kept::new();
        let mut endpoint = 0;
        for project in 0..super::MOST_KEPT as i64 / 16 {
            for _ in 0..16 {
                kept.put(ProjectId::new(project), EndpointId::new(endpoint), "k", ());
                endpoint += 1;
            }
        }
        kept.put(ProjectId::new(0), EndpointId::new(endpoint), "k", ());
        kept.put(ProjectId::new(0), EndpointId::new(endpoint + 1), "k", ());
        assert_eq!(kept.by_endpoint.len(), super::MOST_KEPT);
        assert_eq!(
            kept.count(ProjectId::new(0)),
            16,
            "project 0 gave way, being the largest"
        );
        assert!((1..16).all(|p| kept.count(ProjectId::new(p)) == 16));
    }
}
