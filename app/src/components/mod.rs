//! Small pieces shared by the pages.

pub mod confirm;
pub mod hydration;
pub mod layout;
pub mod widgets;
