//! A broker's TCP connection, found through the target guard, and the bounded reads the
//! protocols are built on: a broker is a tenant's server, and whatever it sends (a line
//! without an end, a frame of a gigabyte) costs this process at most [`MAX_FRAME`].

use std::{net::SocketAddr, time::Duration};

use app::{
    cfg::EgressProxy,
    core::{classify::TransportError, destination::Address},
};
use base64::{engine::general_purpose::STANDARD, Engine};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpStream,
};

use super::Failure;
use crate::dispatcher::guard::{is_public, RefusedTarget};

/// The longest line or frame read from a broker.
pub const MAX_FRAME: usize = 64 * 1024;

pub type Stream = BufReader<TcpStream>;

/// Connects to the broker at `address`: its name resolved, every address checked by the
/// target guard (unless private targets are allowed), the first allowed one dialled;
/// through the egress proxy when there is one, asked to `CONNECT` that checked address
/// (never the name, which it would resolve again).
pub async fn connect(
    address: &Address,
    allow_private: bool,
    timeout: Duration,
    egress: Option<&EgressProxy>,
) -> Result<Stream, Failure> {
    let resolved: Vec<SocketAddr> = tokio::time::timeout(
        timeout,
        tokio::net::lookup_host((address.host.as_str(), address.port)),
    )
    .await
    .map_err(|_| {
        transport(
            TransportError::Dns,
            format!("{}: name lookup timed out", address.host),
        )
    })?
    .map_err(|e| transport(TransportError::Dns, format!("{}: {e}", address.host)))?
    .collect();
    let allowed: Vec<SocketAddr> = resolved
        .iter()
        .copied()
        .filter(|a| allow_private || is_public(a.ip()))
        .collect();
    let Some(first) = allowed.first() else {
        return Err(match resolved.first() {
            Some(a) => transport(
                TransportError::RefusedTarget,
                RefusedTarget(a.ip()).to_string(),
            ),
            None => transport(TransportError::Dns, format!("{}: no address", address.host)),
        });
    };
    if let Some(proxy) = egress {
        let tunnel = tokio::time::timeout(timeout, through(proxy, *first)).await;
        let stream = tunnel.map_err(|_| {
            transport(
                TransportError::Connect,
                "egress proxy: no tunnel in time".into(),
            )
        })??;
        return Ok(BufReader::with_capacity(8 * 1024, stream));
    }
    let stream = tokio::time::timeout(timeout, TcpStream::connect(first))
        .await
        .map_err(|_| {
            transport(
                TransportError::Connect,
                format!("{first}: no connection within {} ms", timeout.as_millis()),
            )
        })?
        .map_err(|e| transport(TransportError::Connect, format!("{first}: {e}")))?;
    let _ = stream.set_nodelay(true);
    Ok(BufReader::with_capacity(8 * 1024, stream))
}

/// A tunnel to `addr` through the egress proxy (its answer's head read to at most 8 KiB).
async fn through(proxy: &EgressProxy, addr: SocketAddr) -> Result<TcpStream, Failure> {
    let failed = |why: String| transport(TransportError::Connect, format!("egress proxy: {why}"));
    let mut conn = TcpStream::connect((proxy.host.as_str(), proxy.port))
        .await
        .map_err(|e| failed(format!("unreachable: {e}")))?;
    let _ = conn.set_nodelay(true);
    let mut request = format!("CONNECT {addr} HTTP/1.1\r\nHost: {addr}\r\n");
    if let Some((user, password)) = &proxy.credentials {
        let token = STANDARD.encode(format!("{user}:{password}"));
        request.push_str(&format!("Proxy-Authorization: Basic {token}\r\n"));
    }
    request.push_str("\r\n");
    conn.write_all(request.as_bytes())
        .await
        .map_err(|e| failed(e.to_string()))?;
    // Byte by byte: nothing of the broker's first words may be read past the head.
    let mut head = Vec::with_capacity(256);
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= 8 * 1024 {
            return Err(failed("an answer head longer than 8 KiB".into()));
        }
        let byte = conn.read_u8().await.map_err(|e| failed(e.to_string()))?;
        head.push(byte);
    }
    let status = String::from_utf8_lossy(&head)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .unwrap_or(0);
    if !(200..300).contains(&status) {
        return Err(failed(format!("answered {status} to CONNECT {addr}")));
    }
    Ok(conn)
}

pub fn transport(kind: TransportError, message: String) -> Failure {
    Failure::Transport(kind, message)
}

/// A broken or misbehaving connection, in words.
pub fn io_failure(e: std::io::Error) -> Failure {
    let kind = match e.kind() {
        std::io::ErrorKind::TimedOut => TransportError::Timeout,
        _ => TransportError::Other,
    };
    let what = match e.kind() {
        std::io::ErrorKind::UnexpectedEof => "the broker closed the connection".to_string(),
        _ => format!("connection to the broker: {e}"),
    };
    transport(kind, what)
}

/// One line (CRLF or LF ended), without its end; at most `max` bytes.
pub async fn read_line(io: &mut Stream, max: usize) -> std::io::Result<String> {
    let mut line = Vec::new();
    loop {
        let buf = io.fill_buf().await?;
        if buf.is_empty() {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let (taken, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..taken]);
        io.consume(taken);
        if line.len() > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the broker sent a line longer than {max} bytes"),
            ));
        }
        if done {
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            return Ok(String::from_utf8_lossy(&line).into_owned());
        }
    }
}

/// Exactly `n` bytes, then the CRLF that ends them; `n` at most [`MAX_FRAME`].
pub async fn read_frame(io: &mut Stream, n: usize) -> std::io::Result<Vec<u8>> {
    if n > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the broker sent a frame of {n} bytes (at most {MAX_FRAME} are read)"),
        ));
    }
    let mut frame = vec![0; n + 2];
    io.read_exact(&mut frame).await?;
    frame.truncate(n);
    Ok(frame)
}
