//! Pure domain code: no HTTP, no SQL. Compiles on the server and in the browser
//! (the inspector verifies signatures client-side), and unit tests reach it directly.

pub mod classify;
pub mod curl;
pub mod cursor;
pub mod duration;
pub mod event_type;
pub mod endpoint_url;
pub mod payload;
pub mod ratelimit;
pub mod retry;
pub mod signing;
pub mod status;
#[cfg(feature = "ssr")]
pub mod ids;
