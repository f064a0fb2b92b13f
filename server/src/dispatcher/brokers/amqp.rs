//! RabbitMQ (AMQP 0-9-1): one channel in confirm mode; a `basic.publish` (mandatory, so a
//! message no queue takes comes back) whose answer is the broker's `basic.ack`. The
//! headers are the message's `headers` table, the body its content.

use app::core::{classify::TransportError, destination::Credentials};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    wire::{io_failure, transport, Stream, MAX_FRAME},
    Failure,
};

const METHOD: u8 = 1;
const HEADER: u8 = 2;
const BODY: u8 = 3;
const FRAME_END: u8 = 0xCE;
/// The largest frame this client takes; told to the broker in `tune-ok`.
const FRAME_MAX: u32 = MAX_FRAME as u32;

pub struct Conn {
    io: Stream,
    frame_max: usize,
    /// The delivery tag of the next publish (confirm mode numbers them from 1).
    next_tag: u64,
}

/// A method frame's class and method, and its arguments.
struct Method {
    class: u16,
    method: u16,
    args: Vec<u8>,
}

impl Conn {
    pub async fn open(
        mut io: Stream,
        creds: Option<&Credentials>,
        vhost: &str,
    ) -> Result<Conn, Failure> {
        io.get_mut()
            .write_all(b"AMQP\x00\x00\x09\x01")
            .await
            .map_err(io_failure)?;
        expect(&mut io, 10, 10).await?; // connection.start
        let user = creds.and_then(|c| c.username.as_deref()).unwrap_or("guest");
        let password = creds.and_then(|c| c.password.as_deref()).unwrap_or("guest");
        let mut capabilities = Vec::new();
        field_bool(&mut capabilities, "authentication_failure_close");
        field_bool(&mut capabilities, "publisher_confirms");
        let mut props = Vec::new();
        shortstr(&mut props, "product");
        props.push(b'S');
        longstr(&mut props, b"posthorn");
        shortstr(&mut props, "capabilities");
        props.push(b'F');
        longstr(&mut props, &capabilities);
        let mut start_ok = Vec::new();
        longstr(&mut start_ok, &props);
        shortstr(&mut start_ok, "PLAIN");
        longstr(&mut start_ok, format!("\0{user}\0{password}").as_bytes());
        shortstr(&mut start_ok, "en_US");
        send_method(&mut io, 0, 10, 11, &start_ok).await?;
        let tune = expect(&mut io, 10, 30).await?; // connection.tune
        let server_max = tune
            .args
            .get(2..6)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let frame_max = if server_max == 0 {
            FRAME_MAX
        } else {
            server_max.min(FRAME_MAX)
        };
        let mut tune_ok = Vec::new();
        tune_ok.extend_from_slice(&1u16.to_be_bytes()); // one channel
        tune_ok.extend_from_slice(&frame_max.to_be_bytes());
        tune_ok.extend_from_slice(&0u16.to_be_bytes()); // no heartbeats: a connection idles briefly
        send_method(&mut io, 0, 10, 31, &tune_ok).await?;
        let mut open = Vec::new();
        shortstr(&mut open, vhost);
        shortstr(&mut open, "");
        open.push(0);
        send_method(&mut io, 0, 10, 40, &open).await?;
        expect(&mut io, 10, 41).await?; // connection.open-ok
        send_method(&mut io, 1, 20, 10, &[0]).await?; // channel.open
        expect(&mut io, 20, 11).await?;
        send_method(&mut io, 1, 85, 10, &[0]).await?; // confirm.select
        expect(&mut io, 85, 11).await?;
        Ok(Conn {
            io,
            frame_max: frame_max as usize,
            next_tag: 1,
        })
    }

    pub async fn publish(
        &mut self,
        exchange: &str,
        routing_key: &str,
        message_id: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<String, Failure> {
        let tag = self.next_tag;
        self.next_tag += 1;
        let mut publish = vec![0, 0];
        shortstr(&mut publish, exchange);
        shortstr(&mut publish, routing_key);
        publish.push(0b01); // mandatory
                            // Properties: content-type, headers, delivery-mode (persistent), message-id.
        let mut table = Vec::new();
        for (k, v) in headers {
            shortstr(&mut table, k);
            table.push(b'S');
            longstr(&mut table, v.as_bytes());
        }
        let mut header = Vec::new();
        header.extend_from_slice(&60u16.to_be_bytes());
        header.extend_from_slice(&0u16.to_be_bytes());
        header.extend_from_slice(&(body.len() as u64).to_be_bytes());
        header.extend_from_slice(&(0x8000u16 | 0x2000 | 0x1000 | 0x0080).to_be_bytes());
        shortstr(&mut header, "application/json");
        longstr(&mut header, &table);
        header.push(2);
        shortstr(&mut header, message_id);
        if header.len() + 8 > self.frame_max {
            return Err(Failure::Refused(format!(
                "the message's headers ({} bytes) do not fit the broker's frame size ({} bytes)",
                header.len(),
                self.frame_max
            )));
        }
        let mut out = Vec::with_capacity(body.len() + header.len() + 128);
        let mut args = Vec::with_capacity(publish.len() + 4);
        args.extend_from_slice(&60u16.to_be_bytes());
        args.extend_from_slice(&40u16.to_be_bytes());
        args.extend_from_slice(&publish);
        frame(&mut out, METHOD, 1, &args);
        frame(&mut out, HEADER, 1, &header);
        for chunk in body.chunks(self.frame_max - 8) {
            frame(&mut out, BODY, 1, chunk);
        }
        self.io
            .get_mut()
            .write_all(&out)
            .await
            .map_err(io_failure)?;
        let mut returned = None;
        loop {
            let (kind, payload) = read_frame(&mut self.io).await.map_err(io_failure)?;
            if kind != METHOD {
                continue; // a returned message's content, a heartbeat
            }
            let m = method(payload)?;
            match (m.class, m.method) {
                (60, 50) => returned = Some(reply(&m.args)), // basic.return: no queue took it
                (60, 80) | (60, 120) if delivery_tag(&m.args) >= tag => {
                    let acked = m.method == 80;
                    return match (acked, returned) {
                        (true, None) => Ok(format!("basic.ack, delivery tag {tag}")),
                        (true, Some(why)) => Err(Failure::Refused(format!(
                            "no queue took the message: the exchange `{exchange}` has no binding for routing key `{routing_key}` ({why})"
                        ))),
                        (false, _) => Err(transport(TransportError::Other, "the broker answered basic.nack".into())),
                    };
                }
                (20, 40) | (10, 50) => return Err(closed(&m)),
                _ => {}
            }
        }
    }
}

fn frame(out: &mut Vec<u8>, kind: u8, channel: u16, payload: &[u8]) {
    out.push(kind);
    out.extend_from_slice(&channel.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out.push(FRAME_END);
}

async fn send_method(
    io: &mut Stream,
    channel: u16,
    class: u16,
    method: u16,
    args: &[u8],
) -> Result<(), Failure> {
    let mut payload = Vec::with_capacity(args.len() + 4);
    payload.extend_from_slice(&class.to_be_bytes());
    payload.extend_from_slice(&method.to_be_bytes());
    payload.extend_from_slice(args);
    let mut out = Vec::with_capacity(payload.len() + 8);
    frame(&mut out, METHOD, channel, &payload);
    io.get_mut().write_all(&out).await.map_err(io_failure)
}

/// Reads method frames until `class`.`method`; a close on the way says why not.
async fn expect(io: &mut Stream, class: u16, method_id: u16) -> Result<Method, Failure> {
    loop {
        let (kind, payload) = read_frame(io).await.map_err(io_failure)?;
        if kind != METHOD {
            continue;
        }
        let m = method(payload)?;
        if (m.class, m.method) == (class, method_id) {
            return Ok(m);
        }
        if matches!((m.class, m.method), (10, 50) | (20, 40)) {
            return Err(closed(&m));
        }
    }
}

/// One frame: its type and payload, at most [`MAX_FRAME`] bytes.
async fn read_frame(io: &mut Stream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 7];
    io.read_exact(&mut head).await?;
    let size = u32::from_be_bytes([head[3], head[4], head[5], head[6]]) as usize;
    if size > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the broker sent a frame of {size} bytes (at most {MAX_FRAME} are read)"),
        ));
    }
    let mut payload = vec![0; size + 1];
    io.read_exact(&mut payload).await?;
    if payload.pop() != Some(FRAME_END) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not an AMQP 0-9-1 frame",
        ));
    }
    Ok((head[0], payload))
}

fn method(payload: Vec<u8>) -> Result<Method, Failure> {
    if payload.len() < 4 {
        return Err(transport(
            TransportError::Other,
            "a short AMQP method frame".into(),
        ));
    }
    Ok(Method {
        class: u16::from_be_bytes([payload[0], payload[1]]),
        method: u16::from_be_bytes([payload[2], payload[3]]),
        args: payload[4..].to_vec(),
    })
}

/// `reply-code reply-text` of a close or a return.
fn reply(args: &[u8]) -> String {
    let code = args
        .get(..2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let len = args.get(2).copied().unwrap_or(0) as usize;
    let text = args
        .get(3..3 + len)
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    format!("{code} {text}")
}

/// A connection or channel closed by the broker: access refused, no such exchange or
/// vhost, a precondition (lasting); anything else (a forced close, a resource alarm) is
/// retried.
fn closed(m: &Method) -> Failure {
    let why = reply(&m.args);
    let code = m
        .args
        .get(..2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let what = if m.class == 10 {
        "connection"
    } else {
        "channel"
    };
    match code {
        403 | 404 | 406 | 530 => Failure::Refused(format!("RabbitMQ closed the {what}: {why}")),
        _ => transport(
            TransportError::Other,
            format!("RabbitMQ closed the {what}: {why}"),
        ),
    }
}

fn delivery_tag(args: &[u8]) -> u64 {
    args.get(..8).map_or(0, |b| {
        u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    })
}

fn shortstr(out: &mut Vec<u8>, s: &str) {
    let b = &s.as_bytes()[..s.len().min(255)];
    out.push(b.len() as u8);
    out.extend_from_slice(b);
}

fn longstr(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

fn field_bool(out: &mut Vec<u8>, name: &str) {
    shortstr(out, name);
    out.extend_from_slice(&[b't', 1]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(class: u16, code: u16, text: &str) -> Method {
        let mut args = code.to_be_bytes().to_vec();
        shortstr(&mut args, text);
        Method {
            class,
            method: if class == 10 { 50 } else { 40 },
            args,
        }
    }

    #[test]
    fn lasting_closes_dead_letter_and_the_rest_are_retried() {
        assert!(
            matches!(closed(&close(20, 404, "NOT_FOUND - no exchange 'x'")), Failure::Refused(w) if w.contains("404 NOT_FOUND"))
        );
        assert!(matches!(
            closed(&close(10, 403, "ACCESS_REFUSED")),
            Failure::Refused(_)
        ));
        assert!(matches!(
            closed(&close(10, 320, "CONNECTION_FORCED")),
            Failure::Transport(..)
        ));
    }

    #[test]
    fn frames_are_typed_sized_and_ended() {
        let mut out = Vec::new();
        frame(&mut out, METHOD, 1, &[0, 20, 0, 10, 0]);
        assert_eq!(out, [1, 0, 1, 0, 0, 0, 5, 0, 20, 0, 10, 0, 0xCE]);
    }
}
