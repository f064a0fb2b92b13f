//! The integration tests that may run side by side: each module drives the real server
//! (in process or as `posthorn` processes) against a database of its own, real receivers
//! on loopback and, where a page is under test, headless Chromium. One binary, so the
//! suite links once; `tests/measured` holds the tests that measure time or memory.

mod common;
mod tls_common;

mod accounts;
mod alert_mail;
mod alerts;
mod api;
mod api_document;
mod api_limits;
mod destinations;
mod dispatcher;
mod ed25519;
mod egress;
mod erasure;
mod filters;
mod group_commit;
mod hostile_claim;
mod inspector;
mod inspector_isolation;
mod isolation;
mod isolation_locks;
mod listen;
mod operator;
mod ops;
mod ordering;
mod portal;
mod prometheus;
mod queue_log;
mod recover;
mod retention;
mod schemas;
mod sealed;
mod telemetry;
mod tenants;
mod throttle;
mod tls;
