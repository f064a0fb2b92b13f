//! API keys: listed by prefix, created (shown once), revoked.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::ApiKeyView;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeysView {
    pub plan: String,
    pub per_minute: u32,
    pub keys: Vec<ApiKeyView>,
}

#[server(endpoint = "list_keys")]
pub async fn list_keys() -> Result<KeysView, ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        core::ratelimit::Plan,
        ctx::server_ctx,
        db::{api_keys, projects},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadKeys).await?;
    let project = projects::get(&ctx.pool, access.project_id)
        .await?
        .ok_or_else(crate::ctx::not_found)?;
    let plan = Plan::parse(&project.plan).unwrap_or(Plan::Trial);
    Ok(KeysView {
        plan: project.plan,
        per_minute: ctx.cfg.plan_limits.per_minute(plan),
        keys: api_keys::list(&ctx.pool, &access).await?,
    })
}

/// Returns the new key: the only time it is ever shown.
#[server(endpoint = "create_key")]
pub async fn create_key(name: String) -> Result<String, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageKeys).await?;
    Ok(use_cases::keys::create(&ctx.pool, &access, &name).await?)
}

#[server(endpoint = "revoke_key")]
pub async fn revoke_key(id: i64) -> Result<(), ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageKeys).await?;
    Ok(use_cases::keys::revoke(&ctx.pool, &access, id).await?)
}
