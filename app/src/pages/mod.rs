//! One module per page.

pub mod alert_confirm;
pub mod alerts;
pub mod audit;
pub mod cabinet;
pub mod deliveries;
pub mod delivery_detail;
pub mod delivery_filters;
pub mod events;
pub mod home;
pub mod inspector;
pub mod keys;
pub mod login;
pub mod not_found;
pub mod schema_editor;
pub mod team;
pub mod webhooks;
