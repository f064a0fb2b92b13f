//! The grammar of a destination's fields, written once as code (these checks) and once as
//! the API document's patterns (the constants), so that a client checked against the
//! document is refused nothing it allows and allowed nothing it refuses.

use crate::core::endpoint_url::{is_host, is_port};
use crate::{host_pattern, port_pattern};

/// Characters no stream, subject or topic may hold: controls and white space.
macro_rules! spaces {
    () => {
        "\\u0000-\\u0020\\u007F-\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF"
    };
}

/// `user[:password]@`, percent-encoded.
macro_rules! userinfo {
    () => {
        "([A-Za-z0-9._~!$&'()*+,;=%-]*(:[A-Za-z0-9._~!$&'()*+,;=%-]*)?@)?"
    };
}

pub const REDIS_URL: &str = concat!(
    "^redis://",
    userinfo!(),
    "(",
    host_pattern!(),
    ")",
    port_pattern!(),
    "(/(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))?$"
);
pub const NATS_URL: &str = concat!(
    "^nats://",
    userinfo!(),
    "(",
    host_pattern!(),
    ")",
    port_pattern!(),
    "$"
);
pub const MQTT_URL: &str = concat!(
    "^mqtt://",
    userinfo!(),
    "(",
    host_pattern!(),
    ")",
    port_pattern!(),
    "$"
);
pub const AMQP_URL: &str = concat!(
    "^amqp://",
    userinfo!(),
    "(",
    host_pattern!(),
    ")",
    port_pattern!(),
    "(/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)?$"
);
pub const STREAM: &str = concat!("^[^", spaces!(), "]{1,256}$");
pub const SUBJECT: &str = concat!(
    "^(?![$]|_INBOX\\.)(?![*>](\\.|$))[^",
    spaces!(),
    ".]+(\\.(?![*>](\\.|$))[^",
    spaces!(),
    ".]+)*$"
);
pub const TOPIC: &str = concat!("^(?![$])[^", spaces!(), "+#]{1,256}$");
/// An AMQP exchange or routing key: printable ASCII, at most 255 (a short string).
pub const AMQP_NAME: &str = "^[ -~]{0,255}$";
pub const CREDENTIAL: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]{1,1024}$";

/// What may follow a broker URL's authority.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Nothing.
    None,
    /// `/<database>`, 0 to 255 (Redis).
    Db,
    /// `/<vhost>`, percent-encoded (AMQP).
    Vhost,
}

/// A stream, subject or topic character (not a control, not white space).
pub fn name_char(c: char) -> bool {
    !(c <= ' '
        || ('\u{7f}'..='\u{a0}').contains(&c)
        || matches!(
            c,
            '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}'
        )
        || matches!(c, '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'))
}

/// A credential: 1 to 1024 characters, no control characters (C0, DEL, C1).
pub fn credential_ok(v: &str) -> bool {
    let n = v.chars().count();
    (1..=1024).contains(&n) && !v.chars().any(char::is_control)
}

/// An AMQP exchange or routing key.
pub fn amqp_name_ok(v: &str) -> bool {
    v.len() <= 255 && v.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// A broker URL of `scheme`, by the grammar of the patterns above.
pub fn check_url(text: &str, scheme: &str, path: Path) -> Result<(), String> {
    let rest = text
        .strip_prefix(scheme)
        .and_then(|r| r.strip_prefix("://"))
        .ok_or(format!("`destination.url` must start with {scheme}://"))?;
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let info_char = |b: u8| b.is_ascii_alphanumeric() || b"._~!$&'()*+,;=%-".contains(&b);
    if let Some(u) = userinfo {
        let (user, password) = u.split_once(':').unwrap_or((u, ""));
        if !user.bytes().chain(password.bytes()).all(info_char) {
            return Err("`destination.url`'s user info may hold letters, digits and ._~!$&'()*+,;=%- only (percent-encode the rest)".into());
        }
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hostport, None),
    };
    if !is_host(host) {
        return Err(format!(
            "`destination.url`: `{}` is not a host name or IPv4 address",
            host.chars().take(64).collect::<String>()
        ));
    }
    if port.is_some_and(|p| !is_port(p)) {
        return Err("`destination.url`: the port must be a number up to 65535".into());
    }
    let segment = tail.strip_prefix('/');
    let fits = match (path, segment) {
        (_, None) => true,
        (Path::None, Some(_)) => false,
        (Path::Db, Some(db)) => {
            !db.is_empty()
                && db.len() <= 3
                && db.bytes().all(|b| b.is_ascii_digit())
                && (db.len() == 1 || !db.starts_with('0'))
                && db.parse::<u16>().is_ok_and(|n| n <= 255)
        }
        (Path::Vhost, Some(v)) => v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~!$&'()*+,;=:@%-".contains(&b)),
    };
    if !fits {
        return Err(match path {
            Path::None => "`destination.url` takes no path".into(),
            Path::Db => "`destination.url`'s path names a database: a number from 0 to 255".into(),
            Path::Vhost => "`destination.url`'s path is the vhost, percent-encoded".into(),
        });
    }
    Ok(())
}
