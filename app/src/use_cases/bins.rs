//! Inspector bins: anyone may make one, no login, a few a minute per source address. The
//! inspector page's button and `POST /inspector/bins` both come here.

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::{
    cfg::Config,
    core::ratelimit::{address_bucket, window_start},
    db::{bins, rate_counters},
    error::{AppError, AppResult},
};

/// Makes a bin for a visitor from `from` (unknown: all unknown visitors share one count);
/// returns its id and expiry. Over the minute's allowance: [`AppError::TooMany`].
pub async fn create(
    pool: &PgPool,
    cfg: &Config,
    from: Option<IpAddr>,
) -> AppResult<(String, DateTime<Utc>)> {
    let bucket = format!(
        "bin-create:{}",
        from.map(address_bucket).unwrap_or_default()
    );
    let made = rate_counters::hit(pool, &bucket, window_start(Utc::now().timestamp())).await?;
    if made > cfg.bin_creations_per_minute {
        return Err(AppError::TooMany(
            "Too many new bins from this address; wait a minute.".into(),
        ));
    }
    let from = from.map(|ip| ip.to_string());
    bins::create(pool, cfg.bin_ttl, from.as_deref()).await
}
