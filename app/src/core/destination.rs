//! Destinations beyond HTTP (SPEC "Destinations"): what a tenant may ask for, checked
//! when saved. The settings kept are never a credential; the credentials (from the URL's
//! user info or the named fields) are split off to be sealed like secrets.

use crate::core::destination_grammar::{self as grammar, Path};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The types this server publishes to, beside `http`.
pub const AVAILABLE: &[&str] = &["redis", "nats", "mqtt", "rabbitmq"];
/// Types of the contract this server does not publish to yet: refused with a clear 422.
pub const NOT_YET: &[&str] = &["sqs", "sns", "eventbridge", "kinesis", "s3"];

/// Longest stream name or subject, and longest credential field.
pub const MAX_NAME: usize = 256;
pub const MAX_CREDENTIAL: usize = 1024;
pub const MAX_URL: usize = 2048;
/// A Redis stream's approximate length bound: the default, and the largest allowed.
pub const DEFAULT_MAXLEN: u64 = 100_000;
pub const MAX_MAXLEN: u64 = 100_000_000;

/// A destination's settings as kept (`endpoints.destination_settings`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Settings {
    /// `XADD` to a stream, trimmed to about `maxlen` entries.
    Redis {
        /// `redis://host:port/db` or `rediss://…`, without credentials.
        url: String,
        stream: String,
        maxlen: u64,
    },
    /// A JetStream publish, acknowledged by the stream that takes `subject`.
    Nats {
        /// `nats://host:port` or `tls://…`, without credentials.
        url: String,
        subject: String,
    },
    /// An AMQP 0-9-1 publish to `exchange` with `routing_key`, confirmed by the broker.
    Rabbitmq {
        /// `amqp://host:port/vhost` or `amqps://…`, without credentials.
        url: String,
        exchange: String,
        routing_key: String,
    },
    /// An MQTT 5 PUBLISH to `topic`; at QoS 1 acknowledged by the broker's PUBACK.
    Mqtt {
        /// `mqtt://host:port` or `mqtts://…`, without credentials.
        url: String,
        topic: String,
        qos: u8,
    },
}

/// Credentials, sealed at rest and never returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl Credentials {
    pub fn is_empty(&self) -> bool {
        self.username.is_none() && self.password.is_none() && self.token.is_none()
    }
}

/// A destination as asked for, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    pub settings: Settings,
    pub credentials: Option<Credentials>,
}

/// Where a broker is: host, port, TLS or not, the path's database (Redis) and virtual
/// host (RabbitMQ).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    pub host: String,
    pub port: u16,
    pub tls: bool,
    pub db: u32,
    pub vhost: String,
}

impl Settings {
    pub fn kind(&self) -> &'static str {
        match self {
            Settings::Redis { .. } => "redis",
            Settings::Nats { .. } => "nats",
            Settings::Mqtt { .. } => "mqtt",
            Settings::Rabbitmq { .. } => "rabbitmq",
        }
    }

    /// What an attempt's `target_url` says: type, host and stream or subject, never a
    /// credential (they were split off when saved).
    pub fn target(&self) -> String {
        match self {
            Settings::Redis { url, stream, .. } => format!("{url} stream={stream}"),
            Settings::Nats { url, subject } => format!("{url} subject={subject}"),
            Settings::Mqtt { url, topic, qos } => format!("{url} topic={topic} qos={qos}"),
            Settings::Rabbitmq {
                url,
                exchange,
                routing_key,
            } => format!("{url} exchange={exchange:?} routing_key={routing_key:?}"),
        }
    }

    /// The broker's address, read from the kept URL (checked when saved).
    pub fn address(&self) -> Result<Address, String> {
        let (url, default_port, tls_scheme) = match self {
            Settings::Redis { url, .. } => (url, 6379, "rediss"),
            Settings::Nats { url, .. } => (url, 4222, "tls"),
            Settings::Mqtt { url, .. } => (url, 1883, "mqtts"),
            Settings::Rabbitmq { url, .. } => (url, 5672, "amqps"),
        };
        let parsed = url::Url::parse(url).map_err(|e| format!("bad URL: {e}"))?;
        let host = match parsed.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err("the URL has no host".into()),
        };
        let db = match parsed.path().trim_start_matches('/') {
            _ if !matches!(self, Settings::Redis { .. }) => 0,
            "" => 0,
            n => n
                .parse::<u32>()
                .ok()
                .filter(|n| *n <= 255)
                .ok_or("the path names a database: a number from 0 to 255")?,
        };
        // An AMQP URI's path is its vhost, percent-encoded (`/%2f` is `/`); none is `/`.
        let vhost = match parsed.path().strip_prefix('/').unwrap_or("") {
            "" => "/".to_string(),
            v => percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into_owned(),
        };
        Ok(Address {
            host,
            port: parsed.port().unwrap_or(default_port),
            tls: parsed.scheme() == tls_scheme,
            db,
            vhost,
        })
    }
}

/// The destination `{"type": …, …}` of a create request; `Ok(None)` for `http` (the
/// caller reads its `url` as a plain endpoint URL).
pub fn parse(value: &Value) -> Result<Option<Destination>, String> {
    let obj = value
        .as_object()
        .ok_or("`destination` must be an object with a `type`")?;
    let kind = obj
        .get("type")
        .and_then(Value::as_str)
        .ok_or("`destination.type` is missing: one of http, redis, nats, mqtt, rabbitmq")?;
    if kind == "http" {
        return Ok(None);
    }
    if NOT_YET.contains(&kind) {
        return Err(format!(
            "destination type `{kind}` is not available on this server yet; available: http, {}",
            AVAILABLE.join(", ")
        ));
    }
    let allowed: &[&str] = match kind {
        "redis" => &["type", "url", "stream", "maxlen"],
        "nats" => &["type", "url", "subject", "user", "password", "token"],
        "mqtt" => &["type", "url", "topic", "qos", "username", "password"],
        "rabbitmq" => &["type", "url", "exchange", "routing_key"],
        _ => {
            return Err(format!(
                "`destination.type` `{}` is unknown: one of http, {}",
                kind.chars().take(40).collect::<String>(),
                AVAILABLE.join(", ")
            ))
        }
    };
    if let Some(extra) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "`destination.{}` is not a setting of `{kind}`; its settings: {}",
            extra.chars().take(40).collect::<String>(),
            allowed[1..].join(", ")
        ));
    }
    let f = Fields(obj);
    let url = f
        .text("url")?
        .ok_or(format!("`destination.url` is required for `{kind}`"))?;
    let (settings, creds) = match kind {
        "redis" => redis(&f, url)?,
        "rabbitmq" => rabbitmq(&f, url)?,
        "mqtt" => mqtt(&f, url)?,
        _ => nats(&f, url)?,
    };
    Ok(Some(Destination {
        settings,
        credentials: (!creds.is_empty()).then_some(creds),
    }))
}

/// A destination's fields, read by type.
struct Fields<'a>(&'a serde_json::Map<String, Value>);

impl Fields<'_> {
    /// A string field; absent or null is None.
    fn text(&self, name: &str) -> Result<Option<&str>, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(format!("`destination.{name}` must be a string")),
        }
    }

    /// A whole-number field from 0 to `max`; absent or null is `default`.
    fn whole(&self, name: &str, min: u64, max: u64, default: u64) -> Result<u64, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => whole(v).filter(|n| (min..=max).contains(n)).ok_or(format!(
                "`destination.{name}` must be a whole number from {min} to {max}"
            )),
        }
    }
}

type Parsed = (Settings, Credentials);

fn redis(f: &Fields, url: &str) -> Result<Parsed, String> {
    let (url, creds) = broker_url(url, &["redis", "rediss"], 6379, Path::Db)?;
    let stream = name(f.text("stream")?, "stream", false)?;
    let maxlen = f.whole("maxlen", 1, MAX_MAXLEN, DEFAULT_MAXLEN)?;
    let settings = Settings::Redis {
        url,
        stream,
        maxlen,
    };
    settings.address()?;
    Ok((settings, creds))
}

fn rabbitmq(f: &Fields, url: &str) -> Result<Parsed, String> {
    let (url, creds) = broker_url(url, &["amqp", "amqps"], 5672, Path::Vhost)?;
    // Left out: the default exchange, and no routing key (a message no queue takes comes
    // back, and dead-letters with the reason).
    let exchange = f.text("exchange")?.unwrap_or_default();
    let routing_key = f.text("routing_key")?.unwrap_or_default();
    for (what, v) in [("exchange", exchange), ("routing_key", routing_key)] {
        if !grammar::amqp_name_ok(v) {
            return Err(format!(
                "`destination.{what}` must be at most 255 printable ASCII characters"
            ));
        }
    }
    let settings = Settings::Rabbitmq {
        url,
        exchange: exchange.to_string(),
        routing_key: routing_key.to_string(),
    };
    Ok((settings, creds))
}

fn mqtt(f: &Fields, url: &str) -> Result<Parsed, String> {
    let (url, mut creds) = broker_url(url, &["mqtt", "mqtts"], 1883, Path::None)?;
    let topic = name(f.text("topic")?, "topic", false)?;
    if topic.starts_with('$') || topic.contains(['+', '#']) {
        return Err(format!(
            "`destination.topic` `{topic}` may not hold wildcards (+ or #) or start with `$`"
        ));
    }
    let qos = f
        .whole("qos", 0, 1, 1)
        .map_err(|_| "`destination.qos` must be 0 or 1".to_string())? as u8;
    if let Some(user) = f.text("username")? {
        creds.username = Some(credential(user, "username")?);
    }
    if let Some(password) = f.text("password")? {
        creds.password = Some(credential(password, "password")?);
    }
    Ok((Settings::Mqtt { url, topic, qos }, creds))
}

fn nats(f: &Fields, url: &str) -> Result<Parsed, String> {
    let (url, mut creds) = broker_url(url, &["nats", "tls"], 4222, Path::None)?;
    let subject = name(f.text("subject")?, "subject", true)?;
    if let Some(user) = f.text("user")? {
        creds.username = Some(credential(user, "user")?);
    }
    if let Some(password) = f.text("password")? {
        creds.password = Some(credential(password, "password")?);
    }
    if let Some(token) = f.text("token")? {
        creds.token = Some(credential(token, "token")?);
    }
    if creds.token.is_some() && (creds.username.is_some() || creds.password.is_some()) {
        return Err("NATS takes `user` and `password`, or a `token`, not both".into());
    }
    Ok((Settings::Nats { url, subject }, creds))
}

/// A broker URL of one of `schemes`, with its user info split off as credentials: the
/// kept URL is `scheme://host:port[/path]`, port written out.
fn broker_url(
    text: &str,
    schemes: &[&str],
    default_port: u16,
    path: Path,
) -> Result<(String, Credentials), String> {
    if text.chars().count() > MAX_URL {
        return Err(format!(
            "`destination.url` is longer than {MAX_URL} characters"
        ));
    }
    if text.starts_with(&format!("{}://", schemes[1])) {
        return Err(format!(
            "`{}://` (TLS) is not available on this server yet: use `{}://`",
            schemes[1], schemes[0]
        ));
    }
    grammar::check_url(text, schemes[0], path)?;
    let url = url::Url::parse(text).map_err(|e| format!("`destination.url` is not a URL: {e}"))?;
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or("`destination.url` has no host")?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err("`destination.url` takes no query and no fragment".into());
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    // Bounded by the URL's own length; the grammar checked what they may hold.
    let mut creds = Credentials::default();
    if !url.username().is_empty() {
        creds.username = Some(decode(url.username()));
    }
    if let Some(p) = url.password().filter(|p| !p.is_empty()) {
        creds.password = Some(decode(p));
    }
    let path = url.path().trim_end_matches('/');
    let kept = format!(
        "{}://{}:{}{}",
        url.scheme(),
        host,
        url.port().unwrap_or(default_port),
        path
    );
    Ok((kept, creds))
}

fn credential(value: &str, what: &str) -> Result<String, String> {
    if !grammar::credential_ok(value) {
        return Err(format!(
            "`destination.{what}` must be 1 to {MAX_CREDENTIAL} characters without control characters"
        ));
    }
    Ok(value.to_string())
}

/// A whole number as JSON Schema's `integer` takes it (`5.0` too).
fn whole(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && (0.0..9.0e15).contains(f))
            .map(|f| f as u64)
    })
}

/// A stream name (any printable text) or a NATS subject (dot-separated tokens, no
/// wildcards, not in the `$` or `_INBOX` namespaces the server itself uses).
fn name(value: Option<&str>, what: &str, subject: bool) -> Result<String, String> {
    let value = value.ok_or(format!("`destination.{what}` is required"))?;
    if value.is_empty()
        || value.chars().count() > MAX_NAME
        || !value.chars().all(grammar::name_char)
    {
        return Err(format!(
            "`destination.{what}` must be 1 to {MAX_NAME} characters without spaces or control characters"
        ));
    }
    if subject {
        if value
            .split('.')
            .any(|t| t.is_empty() || t == "*" || t == ">")
        {
            return Err(format!(
                "`destination.subject` `{value}` must be dot-separated names, without wildcards (* or >) or empty parts"
            ));
        }
        if value.starts_with('$') || value.starts_with("_INBOX.") {
            return Err(
                "`destination.subject` may not be in the server's own `$…` or `_INBOX.` subjects"
                    .into(),
            );
        }
    }
    Ok(value.to_string())
}

#[cfg(test)]
#[path = "destination_tests.rs"]
mod tests;
