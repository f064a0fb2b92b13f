//! What server functions find in their context: the pool and the configuration.

use std::sync::Arc;

use leptos::prelude::*;
use sqlx::PgPool;

use crate::{cfg::Config, error::AppError};

#[derive(Clone)]
pub struct ServerCtx {
    pub pool: PgPool,
    pub cfg: Arc<Config>,
}

pub fn server_ctx() -> Result<ServerCtx, ServerFnError> {
    use_context::<ServerCtx>()
        .ok_or_else(|| ServerFnError::ServerError("server context missing".into()))
}

pub fn not_found() -> ServerFnError {
    AppError::NotFound.into()
}
