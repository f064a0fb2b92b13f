//! The inspector's server functions: make a bin, read what it caught.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::BinRequest;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BinInfo {
    pub id: String,
    pub url: String,
    #[serde(deserialize_with = "crate::core::wire::utc")]
    pub expires_at: DateTime<Utc>,
}

/// Bin creations allowed per source address per minute, by default.
pub use crate::core::ratelimit::BIN_CREATIONS_PER_MINUTE;

#[server(endpoint = "create_bin")]
pub async fn create_bin() -> Result<BinInfo, ServerFnError> {
    use crate::{ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let from = leptos_axum::extract::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .await
        .map(|c| c.0.ip())
        .ok();
    let (id, expires_at) = use_cases::bins::create(&ctx.pool, &ctx.cfg, from).await?;
    Ok(BinInfo {
        url: ctx.cfg.bin_url(&id),
        id,
        expires_at,
    })
}

#[server(endpoint = "get_bin_info")]
pub async fn get_bin_info(id: String) -> Result<BinInfo, ServerFnError> {
    use crate::{ctx::server_ctx, db::bins, error::AppError};
    let ctx = server_ctx()?;
    let expires_at = bins::live(&ctx.pool, &id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(BinInfo {
        url: ctx.cfg.bin_url(&id),
        id,
        expires_at,
    })
}

/// One page of captures for the bin's page: newer than `after` (live updates) or older
/// than `before` ("Load older"). Large bodies stay behind until the row is opened.
#[server(endpoint = "bin_requests")]
pub async fn bin_requests(
    id: String,
    after: Option<i64>,
    before: Option<i64>,
) -> Result<Vec<BinRequest>, ServerFnError> {
    use crate::{ctx::server_ctx, db::bins, error::AppError};
    let ctx = server_ctx()?;
    bins::live(&ctx.pool, &id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(bins::page(
        &ctx.pool,
        &id,
        after,
        before,
        PAGE_SIZE,
        2 * 1024 * 1024,
        256 * 1024,
    )
    .await?)
}

/// Captures shown per page of a bin.
pub const PAGE_SIZE: i64 = 50;

/// One capture's body, when it did not come with the list.
#[server(endpoint = "bin_request_body")]
pub async fn bin_request_body(id: String, request_id: i64) -> Result<Vec<u8>, ServerFnError> {
    use crate::{ctx::server_ctx, db::bins, error::AppError};
    let ctx = server_ctx()?;
    Ok(bins::body(&ctx.pool, &id, request_id)
        .await?
        .ok_or(AppError::NotFound)?)
}
