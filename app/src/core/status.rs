//! The attempt lifecycle and the words the API and dashboard use for it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    Auto,
    ManualRetry,
    Redirect,
    Test,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::ManualRetry => "manual_retry",
            Trigger::Redirect => "redirect",
            Trigger::Test => "test",
        }
    }
}

/// Error kinds recorded on failed attempts; the dashboard filters on them.
pub const ERROR_KINDS: [(&str, &str); 7] = [
    ("timeout", "Timeout"),
    ("connect", "Connect"),
    ("dns", "DNS"),
    ("tls", "TLS"),
    ("http_status", "HTTP status"),
    ("refused_target", "Refused target"),
    ("endpoint_deleted", "Endpoint deleted"),
];
