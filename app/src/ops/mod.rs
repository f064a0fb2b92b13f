//! The product's use cases, one module per feature. Each use case takes the caller's
//! [`crate::auth::Access`], states its [`crate::core::permissions::Action`], owns its
//! transaction and writes its audit entry inside it. The cabinet's server functions and
//! the public API's handlers only parse, call one of these, and shape the answer.

pub mod alerts;
pub mod bins;
pub mod deliveries;
pub mod endpoints;
pub mod erasures;
pub mod ingest;
pub mod keys;
pub mod replays;
pub mod schema_gate;
pub mod schemas;
pub mod team;
