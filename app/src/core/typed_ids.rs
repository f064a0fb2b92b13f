//! Typed ids: a project's id cannot be passed where an endpoint's is meant, and a claim
//! cannot count an endpoint's rows against a project. Each wraps the bare key, and is
//! transparent on the wire (JSON and the API documents are unchanged) and in SQL (rows
//! decode into them, arrays bind as `bigint[]`). A `query!` parameter takes the bare
//! key: `id.get()`, or `&ids as _` for an array.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

macro_rules! key_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        #[cfg_attr(feature = "ssr", derive(sqlx::Type), sqlx(transparent))]
        pub struct $name(i64);

        impl $name {
            pub const fn new(key: i64) -> Self {
                Self(key)
            }

            /// The bare key, for SQL parameters, URLs and the browser's element ids.
            pub const fn get(self) -> i64 {
                self.0
            }
        }

        impl From<i64> for $name {
            fn from(key: i64) -> Self {
                Self(key)
            }
        }

        impl From<$name> for i64 {
            fn from(id: $name) -> i64 {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = std::num::ParseIntError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                s.parse().map(Self)
            }
        }
    };
}

key_id!(
    /// A project (a tenant's unit of isolation).
    ProjectId
);
key_id!(
    /// An endpoint (a destination that a project's events go to).
    EndpointId
);
key_id!(
    /// One attempt of one delivery (a row of the attempt log).
    AttemptId
);
key_id!(
    /// A dashboard user.
    UserId
);

/// An event: `evt_…` as Posthorn makes it, or the id the caller gave. Reads as a `str`
/// (like svix-server's string ids), so it goes wherever text is read.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
#[cfg_attr(feature = "ssr", derive(sqlx::Type), sqlx(transparent))]
pub struct EventId(String);

impl EventId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for EventId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for EventId {
    fn from(id: String) -> Self {
        Self(id)
    }
}

impl From<&str> for EventId {
    fn from(id: &str) -> Self {
        Self(id.to_owned())
    }
}

impl From<&String> for EventId {
    fn from(id: &String) -> Self {
        Self(id.clone())
    }
}

impl From<EventId> for String {
    fn from(id: EventId) -> String {
        id.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_their_bare_key_on_the_wire() {
        let project = ProjectId::new(42);
        assert_eq!(serde_json::to_string(&project).unwrap(), "42");
        assert_eq!(serde_json::from_str::<ProjectId>("42").unwrap(), project);
        let event = EventId::from("evt_1");
        assert_eq!(serde_json::to_string(&event).unwrap(), "\"evt_1\"");
        assert_eq!("7".parse::<EndpointId>().unwrap().get(), 7);
        assert!("x".parse::<AttemptId>().is_err());
        assert_eq!(UserId::from(3).to_string(), "3");
    }
}
