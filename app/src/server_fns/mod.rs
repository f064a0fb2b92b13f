//! The dashboard's server functions, one module per page, in one place: each names its
//! action to the authorization layer first, then reads through `db` or changes through
//! one use case in `use_cases/`, and shapes the answer for the page.

pub mod alerts;
pub mod catalogue;
pub mod deliveries;
pub mod endpoints;
pub mod filters;
pub mod inspector;
pub mod keys;
pub mod schemas;
pub mod team;
