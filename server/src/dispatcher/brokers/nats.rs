//! NATS JetStream: a publish with headers (`HPUB`) whose reply is the stream's ack.
//! `Nats-Msg-Id` is the attempt's request id, so a lease's re-send of the same attempt is
//! dropped by the stream as a duplicate, and a Retry (a new request id) is not.

use app::core::{classify::TransportError, destination::Credentials};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::{
    wire::{io_failure, read_frame, read_line, transport, Stream, MAX_FRAME},
    Failure,
};

pub struct Conn {
    io: Stream,
    /// Replies come to `<inbox>.<n>`, one subscription for all of them.
    inbox: String,
    next: u64,
    max_payload: usize,
}

impl Conn {
    /// Reads the server's INFO, says CONNECT (with the credentials) and waits for the
    /// PONG that confirms it was taken.
    pub async fn open(mut io: Stream, creds: Option<&Credentials>) -> Result<Conn, Failure> {
        let info = read_line(&mut io, MAX_FRAME).await.map_err(io_failure)?;
        let info: Value = info
            .strip_prefix("INFO ")
            .and_then(|j| serde_json::from_str(j).ok())
            .ok_or_else(|| transport(TransportError::Other, "not a NATS server".into()))?;
        if info["headers"] != Value::Bool(true) {
            return Err(Failure::Refused(
                "the NATS server takes no message headers (NATS 2.2 or later is needed)".into(),
            ));
        }
        let max_payload = info["max_payload"].as_u64().unwrap_or(1024 * 1024) as usize;
        let mut connect = serde_json::json!({
            "verbose": false, "pedantic": false, "tls_required": false, "name": "posthorn",
            "lang": "rust", "version": env!("CARGO_PKG_VERSION"), "protocol": 1,
            "headers": true, "no_responders": true,
        });
        if let Some(c) = creds {
            if let Some(u) = &c.username {
                connect["user"] = u.as_str().into();
            }
            if let Some(p) = &c.password {
                connect["pass"] = p.as_str().into();
            }
            if let Some(t) = &c.token {
                connect["auth_token"] = t.as_str().into();
            }
        }
        let inbox = format!("_INBOX.{}", ulid::Ulid::new());
        let hello = format!("CONNECT {connect}\r\nPING\r\n");
        io.get_mut()
            .write_all(hello.as_bytes())
            .await
            .map_err(io_failure)?;
        loop {
            let line = read_line(&mut io, MAX_FRAME).await.map_err(io_failure)?;
            match line.split_whitespace().next().unwrap_or("") {
                "PONG" => break,
                "PING" => io
                    .get_mut()
                    .write_all(b"PONG\r\n")
                    .await
                    .map_err(io_failure)?,
                "-ERR" => return Err(server_error(&line)),
                _ => {} // +OK, INFO
            }
        }
        let sub = format!("SUB {inbox}.* 1\r\n");
        io.get_mut()
            .write_all(sub.as_bytes())
            .await
            .map_err(io_failure)?;
        Ok(Conn {
            io,
            inbox,
            next: 0,
            max_payload,
        })
    }

    /// Publishes the message to `subject` and waits for the stream's ack.
    pub async fn publish(
        &mut self,
        subject: &str,
        msg_id: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<String, Failure> {
        self.next += 1;
        let reply = format!("{}.{}", self.inbox, self.next);
        let mut head = format!("NATS/1.0\r\nNats-Msg-Id: {msg_id}\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let total = head.len() + body.len();
        if total > self.max_payload {
            return Err(Failure::Refused(format!(
                "the message ({total} bytes with its headers) is larger than the server's max_payload ({} bytes)",
                self.max_payload
            )));
        }
        let mut out = Vec::with_capacity(total + 128);
        out.extend_from_slice(
            format!("HPUB {subject} {reply} {} {total}\r\n", head.len()).as_bytes(),
        );
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\r\n");
        self.io
            .get_mut()
            .write_all(&out)
            .await
            .map_err(io_failure)?;
        loop {
            let line = read_line(&mut self.io, MAX_FRAME)
                .await
                .map_err(io_failure)?;
            let parts: Vec<&str> = line.split_whitespace().collect();
            let (header_len, total_len) = match parts.as_slice() {
                ["PING"] => {
                    self.io
                        .get_mut()
                        .write_all(b"PONG\r\n")
                        .await
                        .map_err(io_failure)?;
                    continue;
                }
                ["-ERR", ..] => return Err(server_error(&line)),
                ["MSG", _, _, n] | ["MSG", _, _, _, n] => (0, size(n)?),
                ["HMSG", _, _, h, n] | ["HMSG", _, _, _, h, n] => (size(h)?, size(n)?),
                _ => continue, // +OK, PONG, INFO
            };
            let frame = read_frame(&mut self.io, total_len)
                .await
                .map_err(io_failure)?;
            if parts[1] != reply {
                continue; // an answer to nothing this connection waits for
            }
            let head = String::from_utf8_lossy(&frame[..header_len.min(frame.len())]);
            if head.starts_with("NATS/1.0 503") {
                return Err(Failure::Refused(format!(
                    "no JetStream stream takes subject `{subject}` (the server has no responder for it)"
                )));
            }
            return ack(&frame[header_len.min(frame.len())..]);
        }
    }
}

fn size(n: &str) -> Result<usize, Failure> {
    n.parse()
        .map_err(|_| transport(TransportError::Other, format!("a bad size `{n}` from NATS")))
}

/// `-ERR '…'`: an authorization refusal will not change by itself; anything else is a
/// broken connection, retried.
fn server_error(line: &str) -> Failure {
    let what = line.trim_start_matches("-ERR").trim().trim_matches('\'');
    let lower = what.to_lowercase();
    if lower.contains("authorization")
        || lower.contains("authentication")
        || lower.contains("permissions violation")
    {
        Failure::Refused(format!("NATS refused: {what}"))
    } else {
        transport(TransportError::Other, format!("NATS answered: {what}"))
    }
}

/// The stream's answer: `{"stream","seq","duplicate"?}`, or `{"error":{…}}`. A 503
/// (the stream is short of resources, or has no leader just now) is retried; any other
/// error will not change by itself.
pub fn ack(payload: &[u8]) -> Result<String, Failure> {
    let v: Value = serde_json::from_slice(payload).map_err(|_| {
        transport(
            TransportError::Other,
            format!(
                "NATS answered the publish with `{}`",
                String::from_utf8_lossy(payload)
            ),
        )
    })?;
    if let Some(e) = v.get("error") {
        let what = format!(
            "JetStream refused the message: {} (code {}, error {})",
            e["description"].as_str().unwrap_or("no description"),
            e["code"],
            e["err_code"]
        );
        return Err(if e["code"] == 503 {
            transport(TransportError::Other, what)
        } else {
            Failure::Refused(what)
        });
    }
    let (Some(stream), Some(seq)) = (v["stream"].as_str(), v["seq"].as_u64()) else {
        return Err(transport(
            TransportError::Other,
            format!("NATS answered `{v}`"),
        ));
    };
    let duplicate = if v["duplicate"] == true {
        " (a duplicate: already stored)"
    } else {
        ""
    };
    Ok(format!("stream {stream}, sequence {seq}{duplicate}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streams_answer_decides() {
        assert_eq!(
            ack(br#"{"stream":"ORDERS","seq":7}"#).ok().as_deref(),
            Some("stream ORDERS, sequence 7")
        );
        assert!(ack(br#"{"stream":"O","seq":7,"duplicate":true}"#)
            .unwrap()
            .ends_with("already stored)"));
        let refused = ack(br#"{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"}}"#);
        assert!(matches!(refused, Err(Failure::Refused(ref w)) if w.contains("expected stream")));
        let busy = ack(
            br#"{"error":{"code":503,"err_code":10077,"description":"insufficient resources"}}"#,
        );
        assert!(matches!(busy, Err(Failure::Transport(..))));
        assert!(matches!(ack(b"garbage"), Err(Failure::Transport(..))));
    }

    #[test]
    fn authorization_errors_are_lasting() {
        assert!(matches!(
            server_error("-ERR 'Authorization Violation'"),
            Failure::Refused(_)
        ));
        assert!(matches!(
            server_error("-ERR 'Stale Connection'"),
            Failure::Transport(..)
        ));
    }
}
