//! The `posthorn` server: the web app (dashboard, public API, inspector), the dispatcher
//! and the command line around them.

pub mod alerts;
pub mod api;
pub mod cli;
pub mod dispatcher;
pub mod health;
pub mod inspector;
pub mod listen;
pub mod maintenance;
pub mod metrics;
pub mod operator;
pub mod portal;
pub mod replayer;
pub mod schema_download;
pub mod seed;
pub mod state;
pub mod telemetry;
pub mod web;
