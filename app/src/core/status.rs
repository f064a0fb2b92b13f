//! The attempt lifecycle and the words the API and dashboard use for it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    Pending,
    InFlight,
    Succeeded,
    Failed,
    DeadLetter,
}

impl DeliveryStatus {
    pub const ALL: [DeliveryStatus; 5] = [
        DeliveryStatus::Pending,
        DeliveryStatus::InFlight,
        DeliveryStatus::Succeeded,
        DeliveryStatus::Failed,
        DeliveryStatus::DeadLetter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::InFlight => "in_flight",
            DeliveryStatus::Succeeded => "succeeded",
            DeliveryStatus::Failed => "failed",
            DeliveryStatus::DeadLetter => "dead_letter",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Not finished yet: the page keeps refreshing such rows.
    pub fn is_live(self) -> bool {
        matches!(self, DeliveryStatus::Pending | DeliveryStatus::InFlight)
    }

    pub fn label(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "Pending",
            DeliveryStatus::InFlight => "In flight",
            DeliveryStatus::Succeeded => "Succeeded",
            DeliveryStatus::Failed => "Failed",
            DeliveryStatus::DeadLetter => "Dead letter",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema), schema(as = DeliveryTrigger))]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    Auto,
    ManualRetry,
    Redirect,
    Test,
    /// A notice to the project's operations endpoint: retried on the schedule, never
    /// filtered.
    Notice,
}

impl Trigger {
    pub const ALL: [Trigger; 5] = [
        Trigger::Auto,
        Trigger::ManualRetry,
        Trigger::Redirect,
        Trigger::Test,
        Trigger::Notice,
    ];

    /// Whether a retryable failure is followed by the next attempt of the schedule.
    pub fn chains(self) -> bool {
        matches!(self, Trigger::Auto | Trigger::Notice)
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// As the dashboard writes it: `manual retry`.
    pub fn label(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::ManualRetry => "manual retry",
            Trigger::Redirect => "redirect",
            Trigger::Test => "test",
            Trigger::Notice => "notice",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::ManualRetry => "manual_retry",
            Trigger::Redirect => "redirect",
            Trigger::Test => "test",
            Trigger::Notice => "notice",
        }
    }
}

/// Why an attempt failed, as recorded in `error_kind`; the dashboard filters on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema), schema(as = DeliveryErrorKind))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Timeout,
    Connect,
    Dns,
    Tls,
    /// Any other network failure.
    Io,
    HttpStatus,
    RefusedTarget,
    EndpointDeleted,
    /// The attempt itself broke (a bug of ours); it is retried on the schedule.
    Internal,
    /// Its event's data was erased: there was nothing left to send.
    Erased,
    /// A broker refused the message for a reason that will not change by itself (bad
    /// credentials, no such stream or subject, too large): dead-lettered at once.
    Refused,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::Timeout,
        ErrorKind::Connect,
        ErrorKind::Dns,
        ErrorKind::Tls,
        ErrorKind::Io,
        ErrorKind::HttpStatus,
        ErrorKind::RefusedTarget,
        ErrorKind::EndpointDeleted,
        ErrorKind::Internal,
        ErrorKind::Erased,
        ErrorKind::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connect => "connect",
            ErrorKind::Dns => "dns",
            ErrorKind::Tls => "tls",
            ErrorKind::Io => "io",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::RefusedTarget => "refused_target",
            ErrorKind::EndpointDeleted => "endpoint_deleted",
            ErrorKind::Internal => "internal",
            ErrorKind::Erased => "erased",
            ErrorKind::Refused => "refused",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "Timeout",
            ErrorKind::Connect => "Connect",
            ErrorKind::Dns => "DNS",
            ErrorKind::Tls => "TLS",
            ErrorKind::Io => "Network",
            ErrorKind::HttpStatus => "HTTP status",
            ErrorKind::RefusedTarget => "Refused target",
            ErrorKind::EndpointDeleted => "Endpoint deleted",
            ErrorKind::Internal => "Internal",
            ErrorKind::Erased => "Erased",
            ErrorKind::Refused => "Refused by broker",
        }
    }
}

/// The lifecycle words are `text` columns: read and written through these checked
/// conversions, so a row with a word the code does not know is an error at the row
/// boundary and a misspelt word cannot compile.
#[cfg(feature = "ssr")]
macro_rules! text_column {
    ($t:ty) => {
        impl sqlx::Type<sqlx::Postgres> for $t {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::Type<sqlx::Postgres>>::type_info()
            }
            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Postgres> for $t {
            fn decode(
                value: sqlx::postgres::PgValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let s = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
                <$t>::parse(s).ok_or_else(|| format!("`{s}` is not a {}", stringify!($t)).into())
            }
        }

        impl sqlx::Encode<'_, sqlx::Postgres> for $t {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::Postgres>>::encode(self.as_str(), buf)
            }
        }

        impl sqlx::postgres::PgHasArrayType for $t {
            fn array_type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::postgres::PgHasArrayType>::array_type_info()
            }
        }
    };
}

#[cfg(feature = "ssr")]
text_column!(DeliveryStatus);
#[cfg(feature = "ssr")]
text_column!(Trigger);
#[cfg(feature = "ssr")]
text_column!(ErrorKind);

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are the database's (its CHECK constraints list the same ones) and the
    /// API's: each reads back as itself, and serde writes the same word.
    #[test]
    fn every_word_round_trips() {
        for s in DeliveryStatus::ALL {
            assert_eq!(DeliveryStatus::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for t in Trigger::ALL {
            assert_eq!(Trigger::parse(t.as_str()), Some(t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        assert_eq!(DeliveryStatus::parse("Pending"), None);
        assert_eq!(ErrorKind::parse("unknown"), None);
    }

    #[test]
    fn live_rows_are_the_unfinished_ones() {
        let live: Vec<_> = DeliveryStatus::ALL
            .into_iter()
            .filter(|s| s.is_live())
            .collect();
        assert_eq!(live, [DeliveryStatus::Pending, DeliveryStatus::InFlight]);
    }
}
