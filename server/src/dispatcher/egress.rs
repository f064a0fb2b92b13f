//! Deliveries through the operator's egress proxy (`POSTHORN_EGRESS_PROXY`), with the
//! target guard still deciding on the address actually reached.
//!
//! A proxy resolves the names it is given, so handing it `CONNECT shop.example:443` would
//! let a hostile DNS answer (or a rebinding one) point it at a private address the guard
//! never saw. The dispatcher's clients therefore talk to a small proxy of their own, on
//! loopback in the same process: it reads the target, resolves it, applies the guard to
//! every address, and asks the egress proxy to `CONNECT <checked address>:<port>`; then
//! it only relays bytes. TLS still runs end to end between the dispatcher and the
//! receiver (certificate checked against the host name, client certificate presented),
//! so neither proxy sees a delivery. Plain `http://` receivers are tunnelled the same
//! way: the egress proxy must allow CONNECT to the ports receivers use.
//!
//! The loopback port is reachable by every local process, and what it opens carries the
//! operator's credentials: it serves only requests that carry a random token of this
//! process (given to its own clients as the proxy's password, never written anywhere),
//! and closes any other connection before reading a target.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use app::cfg::EgressProxy;
use base64::{engine::general_purpose::STANDARD, Engine};
use sha2::{Digest, Sha256};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use super::guard::{is_public, RefusedTarget};

/// A request head (ours or the egress proxy's answer) is at most this long.
const MAX_HEAD: usize = 8 * 1024;
/// Failures remembered for the attempts that caused them, at most, and for how long.
const MOST_REMEMBERED: usize = 1024;
const REMEMBERED_FOR: Duration = Duration::from_secs(60);

/// Why the loopback proxy closed a connection instead of tunnelling it.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The target guard refused the target's address (or its name did not resolve).
    Refused(String),
    /// The egress proxy could not be reached or refused the tunnel.
    Egress(String),
}

type Failures = Arc<Mutex<HashMap<String, (Instant, Failure)>>>;

/// The loopback proxy: where the clients are pointed, and why it closed a connection.
pub struct Guard {
    /// The proxy URL its clients use, with this process's token as the password.
    pub url: String,
    failures: Failures,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Guard {
    /// Listens on a loopback port and serves until dropped. `allow_private` lifts the
    /// address check (local development), not the pinning to the resolved address.
    pub fn start(
        upstream: EgressProxy,
        allow_private: bool,
        connect_timeout: Duration,
    ) -> std::io::Result<Guard> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let token = new_token();
        let url = format!("http://{TOKEN_USER}:{token}@{}", listener.local_addr()?);
        let failures: Failures = Default::default();
        let shared = Arc::new(Shared {
            credentials: STANDARD.encode(format!("{TOKEN_USER}:{token}")),
            upstream,
            allow_private,
            connect_timeout,
            failures: failures.clone(),
        });
        let task = tokio::runtime::Handle::current().spawn(async move {
            let Ok(listener) = TcpListener::from_std(listener) else {
                return;
            };
            while let Ok((conn, _)) = listener.accept().await {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = conn.set_nodelay(true);
                    let _ = shared.serve(conn).await;
                });
            }
        });
        Ok(Guard {
            url,
            failures,
            task,
        })
    }

    /// Why a connection to `url`'s host and port was closed in the last minute, if one
    /// was: the attempt that failed on it is recorded with this reason (a refused target,
    /// an egress proxy down) rather than as a connection the receiver closed.
    pub fn failure(&self, url: &url::Url) -> Option<Failure> {
        let key = authority(&bare(url.host_str()?), url.port_or_known_default()?);
        let map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&key)
            .filter(|(at, _)| at.elapsed() < REMEMBERED_FOR)
            .map(|(_, why)| why.clone())
    }
}

struct Shared {
    /// The base64 `user:token` this process's clients send as `Proxy-Authorization`.
    credentials: String,
    upstream: EgressProxy,
    allow_private: bool,
    connect_timeout: Duration,
    failures: Failures,
}

impl Shared {
    async fn serve(&self, mut client: TcpStream) -> std::io::Result<()> {
        let head = match tokio::time::timeout(self.connect_timeout, read_head(&mut client)).await {
            Ok(Ok(head)) => head,
            _ => return Ok(()),
        };
        // Only this process's own clients are served: anything else is closed unanswered.
        let Some(head) = self.own(&head) else {
            return Ok(());
        };
        let Some(target) = target_of(&String::from_utf8_lossy(&head)) else {
            return Ok(());
        };
        // On failure the connection is closed, not answered: an answer to a plain-HTTP
        // request would be taken for the receiver's. The attempt reads the reason.
        let addr = match self.check(&target).await {
            Ok(addr) => addr,
            Err(why) => {
                self.remember(&target.authority(), Failure::Refused(why));
                return Ok(());
            }
        };
        let tunnel = tokio::time::timeout(self.connect_timeout, self.open_tunnel(addr))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "egress proxy: no tunnel to {addr} within the connect timeout"
                ))
            });
        let mut upstream = match tunnel {
            Ok(upstream) => upstream,
            Err(e) => {
                self.remember(&target.authority(), Failure::Egress(e));
                return Ok(());
            }
        };
        self.forget(&target.authority());
        if !target.connect {
            return self.relay_plain(client, upstream, head, target).await;
        }
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        Ok(())
    }

    /// Plain-HTTP requests in absolute form go to the receiver as they came (servers
    /// accept the absolute form), one head at a time: the client keeps this connection
    /// for this target and sends every later request on it with the token too, so each
    /// head is read and the token taken out; a head without it, for another target, or
    /// with a body of no stated length ends the connection.
    async fn relay_plain(
        &self,
        client: TcpStream,
        upstream: TcpStream,
        first: Vec<u8>,
        target: Target,
    ) -> std::io::Result<()> {
        let (mut from_client, mut to_client) = client.into_split();
        let (mut from_upstream, mut to_upstream) = upstream.into_split();
        let answers =
            tokio::spawn(async move { tokio::io::copy(&mut from_upstream, &mut to_client).await });
        let mut head = first;
        while let Some(length) = body_length(&head) {
            to_upstream.write_all(&head).await?;
            let mut body = (&mut from_client).take(length);
            if tokio::io::copy(&mut body, &mut to_upstream).await? < length {
                break;
            }
            let Ok(next) = read_head(&mut from_client).await else {
                break;
            };
            let text = String::from_utf8_lossy(&next).into_owned();
            match (self.own(&next), target_of(&text)) {
                (Some(stripped), Some(t)) if t == target => head = stripped,
                _ => break,
            }
        }
        answers.abort();
        Ok(())
    }

    /// The head without its `Proxy-Authorization` line when that line carries this
    /// process's token; None otherwise. The line never goes
    /// on to a receiver.
    fn own(&self, head: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(head).ok()?;
        let mut kept = String::with_capacity(text.len());
        let mut authorized = false;
        for line in text.split_inclusive("\r\n") {
            match line.split_once(':') {
                Some((name, value)) if name.eq_ignore_ascii_case("proxy-authorization") => {
                    let sent = value.trim().split_once(' ').and_then(|(scheme, token)| {
                        scheme.eq_ignore_ascii_case("basic").then_some(token.trim())
                    });
                    // Digests compared, so the time taken says nothing of the token.
                    authorized |= sent.is_some_and(|t| {
                        Sha256::digest(t.as_bytes()) == Sha256::digest(self.credentials.as_bytes())
                    });
                }
                _ => kept.push_str(line),
            }
        }
        authorized.then(|| kept.into_bytes())
    }

    /// The one address the egress proxy is asked for: the target's, resolved here and
    /// checked, every address of the answer (as the direct path's resolver does).
    async fn check(&self, target: &Target) -> Result<SocketAddr, String> {
        let addrs: Vec<SocketAddr> = match target.host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, target.port)],
            Err(_) => tokio::net::lookup_host((target.host.as_str(), target.port))
                .await
                .map_err(|e| format!("dns error: {e}"))?
                .collect(),
        };
        if !self.allow_private {
            if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
                return Err(RefusedTarget(bad.ip()).to_string());
            }
        }
        addrs
            .first()
            .copied()
            .ok_or_else(|| format!("dns error: no address for {}", target.host))
    }

    /// `CONNECT addr` through the egress proxy; the stream once it answered 2xx.
    async fn open_tunnel(&self, addr: SocketAddr) -> Result<TcpStream, String> {
        let proxy = (self.upstream.host.as_str(), self.upstream.port);
        let mut conn = TcpStream::connect(proxy)
            .await
            .map_err(|e| format!("egress proxy unreachable: {e}"))?;
        let _ = conn.set_nodelay(true);
        let mut request = format!("CONNECT {addr} HTTP/1.1\r\nHost: {addr}\r\n");
        if let Some((user, password)) = &self.upstream.credentials {
            let token = STANDARD.encode(format!("{user}:{password}"));
            request.push_str(&format!("Proxy-Authorization: Basic {token}\r\n"));
        }
        request.push_str("\r\n");
        conn.write_all(request.as_bytes())
            .await
            .map_err(|e| format!("egress proxy: {e}"))?;
        let head = read_head(&mut conn)
            .await
            .map_err(|e| format!("egress proxy: {e}"))?;
        let status = String::from_utf8_lossy(&head)
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap_or(0);
        if !(200..300).contains(&status) {
            return Err(format!("egress proxy answered {status} to CONNECT {addr}"));
        }
        Ok(conn)
    }

    fn forget(&self, authority: &str) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if !map.is_empty() {
            map.remove(authority);
        }
    }

    fn remember(&self, authority: &str, why: Failure) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MOST_REMEMBERED {
            map.retain(|_, (at, _)| at.elapsed() < REMEMBERED_FOR);
            if map.len() >= MOST_REMEMBERED {
                map.clear();
            }
        }
        map.insert(authority.to_string(), (Instant::now(), why));
    }
}

/// The user name the token goes with in the proxy URL.
const TOKEN_USER: &str = "posthorn";

/// 32 random bytes as hex: the password of the loopback proxy, per process.
fn new_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Reads up to the end of a head (`\r\n\r\n`), at most [`MAX_HEAD`] bytes, one byte
/// past it never: what follows belongs to the tunnel.
async fn read_head(conn: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD || conn.read(&mut byte).await? == 0 {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        head.push(byte[0]);
    }
    Ok(head)
}

/// The length of a request's body: its `Content-Length`, 0 without one; None when it
/// is chunked (or its length unreadable), which the dispatcher's requests never are.
fn body_length(head: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(head).ok()?;
    let mut length = 0;
    for line in text.split("\r\n").skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("transfer-encoding") {
            return None;
        }
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().ok()?;
        }
    }
    Some(length)
}

#[derive(Debug, PartialEq)]
struct Target {
    host: String,
    port: u16,
    /// `CONNECT` (https) rather than a plain request in absolute form.
    connect: bool,
}

impl Target {
    fn authority(&self) -> String {
        authority(&self.host, self.port)
    }
}

/// `host:port` (IPv6 in brackets).
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The target of a proxy request: `CONNECT host:port` or `METHOD http://host[:port]/…`.
fn target_of(head: &str) -> Option<Target> {
    let mut words = head.lines().next()?.split_whitespace();
    let (method, uri) = (words.next()?, words.next()?);
    if method == "CONNECT" {
        let url = url::Url::parse(&format!("https://{uri}")).ok()?;
        return Some(Target {
            host: bare(url.host_str()?),
            port: url.port_or_known_default()?,
            connect: true,
        });
    }
    let url = url::Url::parse(uri).ok()?;
    (url.scheme() == "http").then_some(())?;
    Some(Target {
        host: bare(url.host_str()?),
        port: url.port_or_known_default()?,
        connect: false,
    })
}

fn bare(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_from_connect_and_absolute_requests() {
        let t = target_of("CONNECT shop.example:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.connect),
            ("shop.example", 443, true)
        );
        let t = target_of("POST http://[2606:4700::1]:8080/hook HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.connect),
            ("2606:4700::1", 8080, false)
        );
        assert_eq!(t.authority(), "[2606:4700::1]:8080");
        let t = target_of("POST http://shop.example/hook HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(t.port, 80);
        for bad in [
            "GET /relative HTTP/1.1",
            "POST https://a.example/ HTTP/1.1",
            "",
            "CONNECT",
        ] {
            assert_eq!(target_of(bad), None, "{bad}");
        }
    }

    /// An upstream proxy that records the heads it is sent and answers 200.
    async fn recording_upstream() -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<String>>> = Default::default();
        let kept = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                if let Ok(head) = read_head(&mut conn).await {
                    kept.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&head).into_owned());
                    let _ = conn.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await;
                }
            }
        });
        (port, seen)
    }

    /// What the guard answers a local process that sends `head`: its first bytes.
    async fn ask(guard: &Guard, head: &str) -> Vec<u8> {
        let addr = guard.url.rsplit('@').next().unwrap();
        let mut conn = TcpStream::connect(addr).await.unwrap();
        conn.write_all(head.as_bytes()).await.unwrap();
        let mut answer = vec![0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut answer))
            .await
            .unwrap()
            .unwrap_or(0);
        answer.truncate(n);
        answer
    }

    #[tokio::test]
    async fn only_this_process_may_tunnel_through_the_guard() {
        let (port, seen) = recording_upstream().await;
        let upstream = EgressProxy {
            host: "127.0.0.1".into(),
            port,
            credentials: Some(("ops".into(), "operator-secret".into())),
        };
        let guard = Guard::start(upstream, false, Duration::from_secs(5)).unwrap();
        // Another local process, without the token (or with a wrong one): closed, and
        // the operator's proxy never hears of it.
        for head in [
            "CONNECT 1.1.1.1:443 HTTP/1.1\r\nHost: 1.1.1.1:443\r\n\r\n".to_string(),
            format!(
                "CONNECT 1.1.1.1:443 HTTP/1.1\r\nProxy-Authorization: Basic {}\r\n\r\n",
                STANDARD.encode("posthorn:guess")
            ),
        ] {
            assert_eq!(ask(&guard, &head).await, b"", "{head}");
        }
        assert!(
            seen.lock().unwrap().is_empty(),
            "{:?}",
            seen.lock().unwrap()
        );
        // This process's clients: tunnelled, with the operator's credentials upstream
        // and the token nowhere past the guard.
        let url = url::Url::parse(&guard.url).unwrap();
        let token = STANDARD.encode(format!("{}:{}", url.username(), url.password().unwrap()));
        let answer = ask(
            &guard,
            &format!("CONNECT 1.1.1.1:443 HTTP/1.1\r\nproxy-authorization: basic {token}\r\n\r\n"),
        )
        .await;
        assert!(answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].starts_with("CONNECT 1.1.1.1:443 "), "{seen:?}");
        assert!(seen[0].contains(&STANDARD.encode("ops:operator-secret")));
        assert!(!seen[0].contains(&token), "{seen:?}");
    }

    #[test]
    fn the_token_line_is_taken_out_of_a_plain_request() {
        let shared = Shared {
            credentials: STANDARD.encode("posthorn:abc"),
            upstream: EgressProxy {
                host: "x".into(),
                port: 1,
                credentials: None,
            },
            allow_private: false,
            connect_timeout: Duration::from_secs(1),
            failures: Default::default(),
        };
        let head = format!(
            "POST http://1.1.1.1/hook HTTP/1.1\r\nProxy-Authorization: Basic {}\r\nContent-Length: 2\r\n\r\n",
            STANDARD.encode("posthorn:abc")
        );
        let kept = String::from_utf8(shared.own(head.as_bytes()).unwrap()).unwrap();
        assert_eq!(
            kept,
            "POST http://1.1.1.1/hook HTTP/1.1\r\nContent-Length: 2\r\n\r\n"
        );
        assert_eq!(
            shared.own(b"POST http://1.1.1.1/hook HTTP/1.1\r\n\r\n"),
            None
        );
    }
}
