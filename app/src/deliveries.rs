//! The delivery dashboard's server functions: list, detail, Retry, Redirect.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::{DeliveryDetail, DeliveryPage, DeliveryRow};
pub use crate::{delivery_filter::DeliveryFilter, model::ReplayProgress};

pub const PAGE_SIZE: i64 = 50;

pub use crate::core::curl::curl_command;

#[server(endpoint = "list_deliveries")]
pub async fn list_deliveries(filter: DeliveryFilter) -> Result<DeliveryPage, ServerFnError> {
    use crate::{
        auth::current_access, core::cursor::Cursor, core::permissions::Action, ctx::server_ctx,
        db::deliveries,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadDeliveries).await?;
    let mut rows = deliveries::list(
        &ctx.pool,
        &access,
        &filter,
        ctx.cfg.retention_days,
        PAGE_SIZE + 1,
    )
    .await?;
    let next = if rows.len() as i64 > PAGE_SIZE {
        rows.truncate(PAGE_SIZE as usize);
        rows.last().map(|r| {
            Cursor {
                created_at: r.created_at,
                id: r.id,
            }
            .encode()
        })
    } else {
        None
    };
    Ok(DeliveryPage { rows, next })
}

#[server(endpoint = "get_delivery_detail")]
pub async fn get_delivery_detail(
    project_id: i64,
    id: i64,
) -> Result<DeliveryDetail, ServerFnError> {
    use crate::{
        auth::access_to, core::payload::build_body, core::permissions::Action, ctx::server_ctx,
        db::deliveries,
    };
    let ctx = server_ctx()?;
    let access = access_to(project_id, Action::ReadDeliveries).await?;
    let row = deliveries::get_row(&ctx.pool, &access, id).await?;
    let extras = deliveries::extras(&ctx.pool, &row).await?;
    let body = match (&extras.data, extras.event_created_at) {
        (Some(data), Some(at)) => {
            String::from_utf8_lossy(&build_body(&row.event_id, &row.event_type, at, data))
                .into_owned()
        }
        _ => String::new(),
    };
    let payload = serde_json::from_str::<serde_json::Value>(&body)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| body.clone());
    let request_headers = extras.request_headers.map(|j| j.0).unwrap_or_default();
    let curl = curl_command("POST", &row.target_url, &request_headers, &body);
    let attempts =
        deliveries::attempts_of(&ctx.pool, row.project_id, &row.event_id, row.endpoint_id).await?;
    Ok(DeliveryDetail {
        row,
        payload,
        request_headers,
        response_headers: extras.response_headers.map(|j| j.0).unwrap_or_default(),
        response_body: extras.response_body,
        attempts,
        curl,
    })
}

#[server(endpoint = "retry_delivery")]
pub async fn retry_delivery(project_id: i64, id: i64) -> Result<DeliveryRow, ServerFnError> {
    use crate::{
        auth::access_to,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, deliveries},
    };
    let ctx = server_ctx()?;
    let access = access_to(project_id, Action::Retry).await?;
    let row = deliveries::retry(&ctx.pool, &access, id).await?;
    audit::record(
        &ctx.pool,
        &access,
        "retry",
        &row.event_id,
        serde_json::json!({"delivery": id, "new_delivery": row.id, "request_id": row.request_id}),
    )
    .await?;
    Ok(row)
}

/// Redirects to the given bin (its id or URL), or to a new one.
#[server(endpoint = "redirect_delivery")]
pub async fn redirect_delivery(
    project_id: i64,
    id: i64,
    bin: Option<String>,
) -> Result<(DeliveryRow, String), ServerFnError> {
    use crate::{
        auth::access_to,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, bins, deliveries},
        error::AppError,
    };
    let ctx = server_ctx()?;
    let access = access_to(project_id, Action::Redirect).await?;
    let bin_id = match bin.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
        Some(given) => {
            let id = given
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(given)
                .to_string();
            if bins::live(&ctx.pool, &id).await?.is_none() {
                return Err(AppError::Invalid(
                    "That inspector bin does not exist or has expired.".into(),
                )
                .into());
            }
            id
        }
        None => bins::create(&ctx.pool, ctx.cfg.bin_ttl, None).await?.0,
    };
    let row = deliveries::redirect(&ctx.pool, &access, id, &ctx.cfg.bin_url(&bin_id)).await?;
    audit::record(
        &ctx.pool,
        &access,
        "redirect",
        &row.event_id,
        serde_json::json!({"delivery": id, "bin": bin_id}),
    )
    .await?;
    Ok((row, bin_id))
}

/// Fresh state of some rows (live status updates after Retry / Redirect).
#[server(endpoint = "refresh_rows")]
pub async fn refresh_rows(
    project_id: i64,
    ids: Vec<i64>,
) -> Result<Vec<DeliveryRow>, ServerFnError> {
    use crate::{auth::access_to, core::permissions::Action, ctx::server_ctx, db::deliveries};
    let ctx = server_ctx()?;
    let access = access_to(project_id, Action::ReadDeliveries).await?;
    let ids: Vec<i64> = ids.into_iter().take(50).collect();
    Ok(deliveries::get_rows(&ctx.pool, &access, &ids).await?)
}

/// What the filter bar offers: the project's endpoints and the event types it has seen.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FilterOptions {
    pub project_id: i64,
    pub endpoints: Vec<(i64, String)>,
    pub event_types: Vec<String>,
}

#[server(endpoint = "delivery_filter_options")]
pub async fn delivery_filter_options() -> Result<FilterOptions, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadDeliveries).await?;
    let endpoints: Vec<(i64, String)> = sqlx::query_as(
        "SELECT id, url FROM endpoints WHERE project_id = $1 ORDER BY deleted_at IS NOT NULL, id",
    )
    .bind(access.project_id)
    .fetch_all(&ctx.pool)
    .await?;
    let event_types: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT event_type FROM events WHERE project_id = $1 AND created_at > now() - interval '14 days' ORDER BY 1 LIMIT 200",
    )
    .bind(access.project_id)
    .fetch_all(&ctx.pool)
    .await?;
    Ok(FilterOptions {
        project_id: access.project_id,
        endpoints,
        event_types,
    })
}

/// How many events "Retry all matching" would send for this view.
#[server(endpoint = "preview_replay")]
pub async fn preview_replay(filter: DeliveryFilter) -> Result<i64, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, db::replays};
    let ctx = server_ctx()?;
    let access = current_access(Action::Replay).await?;
    Ok(replays::preview(&ctx.pool, &access, &filter, ctx.cfg.retention_days).await?)
}

#[server(endpoint = "start_replay")]
pub async fn start_replay(filter: DeliveryFilter) -> Result<ReplayProgress, ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, replays},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::Replay).await?;
    let id = replays::start(
        &ctx.pool,
        &access,
        &filter,
        ctx.cfg.retention_days,
        ctx.cfg.replay_per_second as i32,
    )
    .await?;
    let progress = replays::progress(&ctx.pool, &access, id).await?;
    audit::record(
        &ctx.pool,
        &access,
        "bulk_replay",
        &format!("replay #{id}"),
        serde_json::json!({"events": progress.total, "filter": filter.to_query(false)}),
    )
    .await?;
    Ok(progress)
}

#[server(endpoint = "get_replay_progress")]
pub async fn get_replay_progress(id: i64) -> Result<ReplayProgress, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, db::replays};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadDeliveries).await?;
    Ok(replays::progress(&ctx.pool, &access, id).await?)
}

#[server(endpoint = "cancel_replay")]
pub async fn cancel_replay(id: i64) -> Result<ReplayProgress, ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, replays},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::Replay).await?;
    replays::cancel(&ctx.pool, &access, id).await?;
    audit::record(
        &ctx.pool,
        &access,
        "bulk_replay.cancel",
        &format!("replay #{id}"),
        serde_json::json!({}),
    )
    .await?;
    Ok(replays::progress(&ctx.pool, &access, id).await?)
}
