//! Pure domain code: no HTTP, no SQL. Compiles on the server and in the browser
//! (the inspector verifies signatures client-side), and unit tests reach it directly.

pub mod alert_mail;
pub mod alerts;
pub mod capture_source;
pub mod classify;
#[cfg(feature = "ssr")]
pub mod client_cert;
pub mod curl;
pub mod cursor;
pub mod custom_headers;
#[cfg(feature = "ssr")]
pub mod destination;
#[cfg(feature = "ssr")]
pub mod destination_grammar;
pub mod duration;
#[cfg(feature = "ssr")]
pub mod ed25519;
pub mod endpoint_url;
pub mod event_input;
pub mod event_type;
pub mod explain;
#[cfg(feature = "ssr")]
pub mod filter;
#[cfg(feature = "ssr")]
pub mod filter_check;
pub mod id_search;
#[cfg(feature = "ssr")]
pub mod idempotency;
#[cfg(feature = "ssr")]
pub mod ids;
pub mod limits;
pub mod next_path;
pub mod operator;
pub mod payload;
pub mod permissions;
pub mod ratelimit;
pub mod retry;
#[cfg(feature = "ssr")]
pub mod schema;
#[cfg(feature = "ssr")]
pub mod schema_cost;
pub mod schema_draft;
#[cfg(feature = "ssr")]
pub mod sealed;
pub mod signing;
pub mod status;
pub mod text;
pub mod throttle;
#[cfg(feature = "ssr")]
pub mod trace_context;
pub mod typed_ids;
pub mod wire;

pub use typed_ids::{AttemptId, EndpointId, EventId, ProjectId, UserId};
