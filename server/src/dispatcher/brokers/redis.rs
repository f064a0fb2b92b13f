//! Redis Streams: `XADD` over RESP2, the headers as the entry's fields beside `body`.

use app::core::{classify::TransportError, destination::Credentials};
use tokio::io::AsyncWriteExt;

use super::{
    wire::{io_failure, read_frame, read_line, transport, Stream, MAX_FRAME},
    Failure,
};

/// A reply, as far as these commands need one.
#[derive(Debug, PartialEq)]
enum Reply {
    Ok(String),
    Error(String),
    Nil,
}

pub struct Conn {
    io: Stream,
}

impl Conn {
    /// Authenticates and selects the database, on a connection just made.
    pub async fn open(io: Stream, creds: Option<&Credentials>, db: u32) -> Result<Conn, Failure> {
        let mut conn = Conn { io };
        if let Some(password) = creds.and_then(|c| c.password.as_deref()) {
            let mut auth: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = creds.and_then(|c| c.username.as_deref()) {
                auth.push(user.as_bytes());
            }
            auth.push(password.as_bytes());
            if let Reply::Error(e) = conn.call(&auth).await? {
                return Err(Failure::Refused(format!(
                    "Redis refused the credentials: {e}"
                )));
            }
        }
        if db > 0 {
            let db = db.to_string();
            if let Reply::Error(e) = conn.call(&[b"SELECT", db.as_bytes()]).await? {
                return Err(Failure::Refused(format!(
                    "Redis refused database {db}: {e}"
                )));
            }
        }
        Ok(conn)
    }

    /// Appends the message to `stream`, trimmed to about `maxlen` entries; the entry's id
    /// is the answer.
    pub async fn xadd(
        &mut self,
        stream: &str,
        maxlen: u64,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<String, Failure> {
        let maxlen = maxlen.to_string();
        let mut args: Vec<&[u8]> = vec![
            b"XADD",
            stream.as_bytes(),
            b"MAXLEN",
            b"~",
            maxlen.as_bytes(),
            b"*",
        ];
        for (k, v) in headers {
            args.push(k.as_bytes());
            args.push(v.as_bytes());
        }
        args.push(b"body");
        args.push(body);
        match self.call(&args).await? {
            Reply::Ok(id) => Ok(format!("XADD {stream}: entry {id}")),
            Reply::Nil => Err(transport(TransportError::Other, "XADD answered nil".into())),
            Reply::Error(e) => Err(classify(&e)),
        }
    }

    async fn call(&mut self, args: &[&[u8]]) -> Result<Reply, Failure> {
        self.io
            .get_mut()
            .write_all(&command(args))
            .await
            .map_err(io_failure)?;
        reply(&mut self.io).await.map_err(io_failure)
    }
}

/// A command as a RESP array of bulk strings.
fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(args.iter().map(|a| a.len() + 16).sum::<usize>() + 16);
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

async fn reply(io: &mut Stream) -> std::io::Result<Reply> {
    let line = read_line(io, MAX_FRAME).await?;
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let (kind, rest) = line.split_at(line.len().min(1));
    Ok(match kind {
        "+" | ":" => Reply::Ok(rest.to_string()),
        "-" => Reply::Error(rest.to_string()),
        "$" => match rest.parse::<i64>().map_err(|_| bad("a bad bulk length"))? {
            n if n < 0 => Reply::Nil,
            n => {
                Reply::Ok(String::from_utf8_lossy(&read_frame(io, n as usize).await?).into_owned())
            }
        },
        _ => return Err(bad("an answer these commands never get")),
    })
}

/// A Redis error: a refusal that will not change by itself (credentials, permissions, a
/// key of another type, a command the server lacks) dead-letters; anything else (out of
/// memory, loading, a replica, a cluster moving) is retried.
pub fn classify(error: &str) -> Failure {
    let code = error.split_whitespace().next().unwrap_or("");
    let lasting = matches!(code, "WRONGPASS" | "NOAUTH" | "NOPERM" | "WRONGTYPE")
        || (code == "ERR" && (error.contains("unknown command") || error.contains("AUTH")));
    if lasting {
        Failure::Refused(format!("Redis refused the message: {error}"))
    } else {
        transport(TransportError::Other, format!("Redis answered: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_resp_arrays() {
        assert_eq!(
            command(&[b"XADD", b"s", b"*", b"body", b"{}"]),
            b"*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$4\r\nbody\r\n$2\r\n{}\r\n"
        );
    }

    #[test]
    fn lasting_refusals_dead_letter_and_the_rest_are_retried() {
        for e in [
            "WRONGPASS invalid username-password pair or user is disabled.",
            "NOAUTH Authentication required.",
            "NOPERM User x has no permissions to run the 'xadd' command",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
            "ERR unknown command 'XADD'",
        ] {
            assert!(matches!(classify(e), Failure::Refused(_)), "{e}");
        }
        for e in [
            "OOM command not allowed when used memory > 'maxmemory'.",
            "LOADING Redis is loading the dataset in memory",
            "READONLY You can't write against a read only replica.",
        ] {
            assert!(matches!(classify(e), Failure::Transport(..)), "{e}");
        }
    }
}
