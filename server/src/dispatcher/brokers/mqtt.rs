//! MQTT 5: a PUBLISH with the headers as user properties; at QoS 1 the broker's PUBACK is
//! the answer, at QoS 0 the write is all there is.

use app::core::{classify::TransportError, destination::Credentials};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    wire::{io_failure, transport, Stream, MAX_FRAME},
    Failure,
};

const CONNECT: u8 = 0x10;
const CONNACK: u8 = 0x20;
const PUBLISH: u8 = 0x30;
const PUBACK: u8 = 0x40;
const DISCONNECT: u8 = 0xE0;

pub struct Conn {
    io: Stream,
    next_id: u16,
    /// The broker's Maximum Packet Size (CONNACK), else the protocol's.
    max_packet: usize,
}

impl Conn {
    pub async fn open(mut io: Stream, creds: Option<&Credentials>) -> Result<Conn, Failure> {
        let user = creds.and_then(|c| c.username.as_deref());
        let password = creds.and_then(|c| c.password.as_deref());
        let mut body = Vec::with_capacity(64);
        string(b"MQTT", &mut body);
        body.push(5); // protocol version
        body.push(
            0x02 | if user.is_some() { 0x80 } else { 0 }
                | if password.is_some() { 0x40 } else { 0 },
        );
        body.extend_from_slice(&60u16.to_be_bytes()); // keep alive, seconds
        body.push(0); // no properties
        string(
            format!("posthorn-{}", ulid::Ulid::new()).as_bytes(),
            &mut body,
        );
        if let Some(u) = user {
            string(u.as_bytes(), &mut body);
        }
        if let Some(p) = password {
            string(p.as_bytes(), &mut body);
        }
        io.get_mut()
            .write_all(&packet(CONNECT, &body))
            .await
            .map_err(io_failure)?;
        let (kind, body) = read_packet(&mut io).await.map_err(io_failure)?;
        if kind & 0xF0 != CONNACK || body.len() < 2 {
            return Err(transport(
                TransportError::Other,
                "not an MQTT 5 broker".into(),
            ));
        }
        if body[1] != 0 {
            return Err(connack_refusal(body[1]));
        }
        Ok(Conn {
            io,
            next_id: 0,
            max_packet: max_packet_size(&body[2..]).unwrap_or(268_435_455),
        })
    }

    pub async fn publish(
        &mut self,
        topic: &str,
        qos: u8,
        headers: &[(String, String)],
        payload: &[u8],
    ) -> Result<String, Failure> {
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let id = self.next_id;
        let mut props = vec![0x01, 0x01]; // payload format: UTF-8 (the body is JSON)
        props.push(0x03);
        string(b"application/json", &mut props);
        for (k, v) in headers {
            props.push(0x26);
            string(k.as_bytes(), &mut props);
            string(v.as_bytes(), &mut props);
        }
        let mut body = Vec::with_capacity(topic.len() + props.len() + payload.len() + 16);
        string(topic.as_bytes(), &mut body);
        if qos == 1 {
            body.extend_from_slice(&id.to_be_bytes());
        }
        varint(props.len(), &mut body);
        body.extend_from_slice(&props);
        body.extend_from_slice(payload);
        let out = packet(PUBLISH | (qos << 1), &body);
        if out.len() > self.max_packet {
            return Err(Failure::Refused(format!(
                "the message ({} bytes with its properties) is larger than the broker's maximum packet size ({} bytes)",
                out.len(),
                self.max_packet
            )));
        }
        self.io
            .get_mut()
            .write_all(&out)
            .await
            .map_err(io_failure)?;
        if qos == 0 {
            return Ok(format!(
                "published to {topic} at QoS 0 (no acknowledgement)"
            ));
        }
        loop {
            let (kind, body) = read_packet(&mut self.io).await.map_err(io_failure)?;
            match kind & 0xF0 {
                PUBACK if body.len() >= 2 && u16::from_be_bytes([body[0], body[1]]) == id => {
                    return puback(topic, body.get(2).copied().unwrap_or(0));
                }
                DISCONNECT => return Err(disconnected(body.first().copied().unwrap_or(0))),
                _ => {} // PINGRESP, an acknowledgement of nothing waited for
            }
        }
    }
}

/// A fixed header (type, remaining length) and the body.
fn packet(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(kind);
    varint(body.len(), &mut out);
    out.extend_from_slice(body);
    out
}

fn varint(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let mut byte = (n % 128) as u8;
        n /= 128;
        if n > 0 {
            byte |= 0x80;
        }
        out.push(byte);
        if n == 0 {
            break;
        }
    }
}

fn string(s: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len().min(u16::MAX as usize) as u16).to_be_bytes());
    out.extend_from_slice(&s[..s.len().min(u16::MAX as usize)]);
}

/// One packet: its first byte and its body, at most [`MAX_FRAME`] bytes.
async fn read_packet(io: &mut Stream) -> std::io::Result<(u8, Vec<u8>)> {
    let kind = io.read_u8().await?;
    let (mut len, mut shift) = (0usize, 0);
    loop {
        let b = io.read_u8().await?;
        len |= ((b & 0x7F) as usize) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
        if shift > 21 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a bad MQTT length",
            ));
        }
    }
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the broker sent a frame of {len} bytes (at most {MAX_FRAME} are read)"),
        ));
    }
    let mut body = vec![0; len];
    io.read_exact(&mut body).await?;
    Ok((kind, body))
}

/// CONNACK's properties: the Maximum Packet Size (0x27), if the broker sets one.
fn max_packet_size(props: &[u8]) -> Option<usize> {
    let (mut len, mut shift, mut at) = (0usize, 0, 0);
    while let Some(b) = props.get(at) {
        len |= ((b & 0x7F) as usize) << shift;
        shift += 7;
        at += 1;
        if b & 0x80 == 0 || shift > 21 {
            break;
        }
    }
    let props = props.get(at..at + len)?;
    let mut i = 0;
    while i < props.len() {
        let id = props[i];
        i += 1;
        let skip = match id {
            0x27 => {
                return props
                    .get(i..i + 4)
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            }
            0x01 | 0x17 | 0x19 | 0x24 | 0x25 | 0x28 | 0x29 | 0x2A => 1,
            0x13 | 0x21 | 0x22 => 2,
            0x02 | 0x11 | 0x18 => 4,
            0x0B => return None, // a variable-length integer: nothing this reads follows it
            0x26 => {
                let a = props
                    .get(i..i + 2)
                    .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)?;
                let b = props
                    .get(i + 2 + a..i + 4 + a)
                    .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)?;
                4 + a + b
            }
            _ => {
                2 + props
                    .get(i..i + 2)
                    .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)?
            }
        };
        i += skip;
    }
    None
}

/// CONNACK reason codes: credentials, authorization and the protocol will not change by
/// themselves; a busy or unavailable broker may.
fn connack_refusal(code: u8) -> Failure {
    let what = reason(code);
    match code {
        0x84 | 0x85 | 0x86 | 0x87 | 0x8C => {
            Failure::Refused(format!("the MQTT broker refused the connection: {what}"))
        }
        _ => transport(
            TransportError::Other,
            format!("the MQTT broker refused the connection: {what}"),
        ),
    }
}

fn puback(topic: &str, code: u8) -> Result<String, Failure> {
    match code {
        0x00 => Ok(format!("PUBACK for {topic}: accepted")),
        0x10 => Ok(format!(
            "PUBACK for {topic}: accepted, no matching subscribers"
        )),
        0x87 | 0x90 | 0x95 | 0x99 => Err(Failure::Refused(format!(
            "the MQTT broker refused the message: {}",
            reason(code)
        ))),
        _ => Err(transport(
            TransportError::Other,
            format!("the MQTT broker answered: {}", reason(code)),
        )),
    }
}

fn disconnected(code: u8) -> Failure {
    match code {
        0x87 | 0x90 | 0x95 | 0x99 => Failure::Refused(format!(
            "the MQTT broker closed the connection: {}",
            reason(code)
        )),
        _ => transport(
            TransportError::Other,
            format!("the MQTT broker closed the connection: {}", reason(code)),
        ),
    }
}

fn reason(code: u8) -> String {
    let words = match code {
        0x80 => "unspecified error",
        0x83 => "implementation specific error",
        0x84 => "unsupported protocol version",
        0x85 => "client identifier not valid",
        0x86 => "bad user name or password",
        0x87 => "not authorized",
        0x88 => "server unavailable",
        0x89 => "server busy",
        0x8C => "bad authentication method",
        0x90 => "topic name invalid",
        0x95 => "packet too large",
        0x97 => "quota exceeded",
        0x99 => "payload format invalid",
        _ => "",
    };
    format!("reason 0x{code:02X} {words}")
        .trim_end()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_variable_byte_integers() {
        for (n, bytes) in [
            (0, vec![0]),
            (127, vec![0x7F]),
            (128, vec![0x80, 1]),
            (16_384, vec![0x80, 0x80, 1]),
        ] {
            let mut out = Vec::new();
            varint(n, &mut out);
            assert_eq!(out, bytes, "{n}");
        }
    }

    #[test]
    fn the_brokers_maximum_packet_size_is_read_among_other_properties() {
        // Receive Maximum (0x21, 2 bytes), Assigned Client Identifier (0x12, a string),
        // Maximum Packet Size (0x27, 4 bytes).
        let props = [0x21, 0, 10, 0x12, 0, 2, b'i', b'd', 0x27, 0, 0, 4, 0];
        let mut with_len = vec![props.len() as u8];
        with_len.extend_from_slice(&props);
        assert_eq!(max_packet_size(&with_len), Some(1024));
        assert_eq!(max_packet_size(&[0]), None);
    }

    #[test]
    fn lasting_refusals_dead_letter() {
        assert!(
            matches!(connack_refusal(0x86), Failure::Refused(w) if w.contains("bad user name"))
        );
        assert!(matches!(connack_refusal(0x89), Failure::Transport(..)));
        assert!(puback("t", 0x10).is_ok());
        assert!(matches!(puback("t", 0x87), Err(Failure::Refused(_))));
        assert!(matches!(puback("t", 0x97), Err(Failure::Transport(..))));
    }
}
