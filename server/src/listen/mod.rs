//! Listen sessions: `posthorn listen` forwards a project's deliveries to a developer's
//! machine. [`client`] is the CLI, [`session`] the server's side of its WebSocket, and
//! [`protocol`] what the two say to each other.

pub mod client;
pub mod protocol;
pub mod registry;
pub mod session;
