//! The product's use cases, one module per feature: every write and every domain rule
//! (checks, limits, schema conformance, filters' verdicts, audit) is reached through
//! here. Each use case a project's member or API key drives takes the caller's
//! [`crate::auth::Access`], states its [`crate::core::permissions::Action`], owns its
//! transaction and writes its audit entry inside it; the operator's ([`projects`]) speak
//! for the platform. The dashboard's server functions, the public and operator APIs'
//! handlers and the command line only parse, call one of these, and shape the answer;
//! reads may go to `db` directly.

pub mod accounts;
pub mod alerts;
pub mod bins;
pub mod deliveries;
pub mod endpoints;
pub mod erasures;
pub mod ingest;
pub mod keys;
pub mod listen;
pub mod projects;
pub mod replays;
pub mod schema_gate;
pub mod schemas;
pub mod team;
