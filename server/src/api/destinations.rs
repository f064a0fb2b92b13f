//! An endpoint's `destination` in the API: read from the request (checked by
//! [`app::core::destination`]) and written in answers, settings without credentials.

use app::{
    core::destination::{self, Settings},
    model::EndpointView,
};
use serde::Serialize;

use super::ApiError;

/// Where an endpoint's attempts go when it is no plain URL: a `posthorn listen`
/// session's, or a broker it publishes to (SPEC "Destinations"). A broker's credentials
/// are never returned; `credentials_set` says whether it has some.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Destination {
    /// `listen`, `redis`, `nats`, `mqtt` or `rabbitmq`.
    #[serde(rename = "type")]
    #[schema(pattern = "^(listen|redis|nats|mqtt|rabbitmq)$")]
    pub kind: &'static str,
    /// `listen`: the session's `--name` (null: unnamed; it ends when its CLI exits).
    /// Null for a broker.
    #[schema(required = true)]
    pub name: Option<String>,
    /// `listen`: its CLI is connected now (false for a broker).
    pub connected: bool,
    /// A broker's URL without credentials, port written out.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    pub url: Option<String>,
    /// `redis`: the stream `XADD` appends to, and its approximate length bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    pub stream: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = u64, required = false)]
    pub maxlen: Option<u64>,
    /// `nats`: the JetStream subject published to.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    pub subject: Option<String>,
    /// `rabbitmq`: the exchange (`""`: the default exchange) and routing key.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    pub exchange: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    pub routing_key: Option<String>,
    /// `mqtt`: the topic published to, and the QoS (0 or 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    pub topic: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = u8, required = false)]
    pub qos: Option<u8>,
    /// A broker: it has credentials (sealed, never shown). False for `listen`.
    pub credentials_set: bool,
}

impl Destination {
    pub fn of(e: &EndpointView) -> Option<Destination> {
        let mut out = Destination {
            kind: "listen",
            name: None,
            connected: false,
            url: None,
            stream: None,
            maxlen: None,
            subject: None,
            exchange: None,
            routing_key: None,
            topic: None,
            qos: None,
            credentials_set: e.credentials_set,
        };
        if e.is_listen() {
            out.name = e.listen_name.clone();
            out.connected = e.listen_connected;
            return Some(out);
        }
        let settings: Settings = serde_json::from_str(e.destination_settings.as_deref()?).ok()?;
        out.kind = settings.kind();
        match settings {
            Settings::Redis {
                url,
                stream,
                maxlen,
            } => (out.url, out.stream, out.maxlen) = (Some(url), Some(stream), Some(maxlen)),
            Settings::Nats { url, subject } => (out.url, out.subject) = (Some(url), Some(subject)),
            Settings::Rabbitmq {
                url,
                exchange,
                routing_key,
            } => {
                (out.url, out.exchange, out.routing_key) =
                    (Some(url), Some(exchange), Some(routing_key))
            }
            Settings::Mqtt { url, topic, qos } => {
                (out.url, out.topic, out.qos) = (Some(url), Some(topic), Some(qos))
            }
        }
        Some(out)
    }
}

/// What a create request asks for: a plain URL (`url`, or `destination` of type `http`
/// with its `url`) or a broker. Exactly one of the two fields.
pub fn requested(
    url: Option<&str>,
    destination: Option<&serde_json::Value>,
) -> Result<(Option<String>, Option<destination::Destination>), ApiError> {
    match (url, destination) {
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "give `url` or `destination`, not both".to_string(),
        )),
        (None, None) => Err(ApiError::invalid(
            "`url` (an HTTP endpoint) or `destination` is required".to_string(),
        )),
        (Some(url), None) => Ok((Some(url.to_string()), None)),
        (None, Some(d)) => match destination::parse(d).map_err(ApiError::invalid)? {
            Some(broker) => Ok((None, Some(broker))),
            None => {
                let url = d.get("url").and_then(|u| u.as_str()).ok_or_else(|| {
                    ApiError::invalid("`destination.url` is required for `http`".to_string())
                })?;
                Ok((Some(url.to_string()), None))
            }
        },
    }
}
