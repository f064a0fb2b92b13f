//! One module per page.

pub mod cabinet;
pub mod deliveries;
pub mod home;
pub mod inspector;
pub mod login;
pub mod not_found;
