//! Small pieces shared by the pages.

#[cfg(feature = "ssr")]
pub mod cert_card;
pub mod confirm;
#[cfg(feature = "ssr")]
pub mod filter_card;
pub mod hydration;
pub mod layout;
pub mod widgets;
