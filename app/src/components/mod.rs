//! Small pieces shared by the pages.

pub mod layout;
pub mod widgets;
