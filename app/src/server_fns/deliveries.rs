//! The delivery dashboard's server functions: list, detail, Retry, Redirect.

use crate::core::{AttemptId, ProjectId};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::{DeliveryDetail, DeliveryPage, DeliveryRow};
pub use crate::{delivery_filter::DeliveryFilter, model::ReplayProgress};

pub const PAGE_SIZE: i64 = 50;

pub use crate::core::curl::curl_command;

#[server(endpoint = "list_deliveries")]
pub async fn list_deliveries(
    #[server(default)] filter: DeliveryFilter,
) -> Result<DeliveryPage, ServerFnError> {
    use crate::{core::cursor::Cursor, ctx::server_ctx, db::deliveries};
    let ctx = server_ctx()?;
    let (access, days) = view_window(filter.project).await?;
    let mut rows: Vec<DeliveryRow> =
        deliveries::list(&ctx.pool, &access, &filter, days, PAGE_SIZE + 1)
            .await?
            .into_iter()
            .map(DeliveryRow::explain_listed)
            .collect();
    let next = if rows.len() as i64 > PAGE_SIZE {
        rows.truncate(PAGE_SIZE as usize);
        rows.last().map(|r| {
            Cursor {
                created_at: r.created_at,
                id: r.id.get(),
            }
            .encode()
        })
    } else {
        None
    };
    Ok(DeliveryPage {
        rows,
        next,
        retention_days: days,
        as_of: Some(chrono::Utc::now()),
    })
}

#[server(endpoint = "get_delivery_detail")]
pub async fn get_delivery_detail(
    project_id: ProjectId,
    id: AttemptId,
) -> Result<DeliveryDetail, ServerFnError> {
    use crate::{
        auth::access_to, core::permissions::Action, ctx::server_ctx, db::deliveries, use_cases,
    };
    let ctx = server_ctx()?;
    let access = access_to(project_id, Action::ReadDeliveries).await?;
    let d = use_cases::deliveries::detail(&ctx.pool, &access, id).await?;
    crate::db::projects::within_window(
        &ctx.pool,
        d.row.project_id,
        ctx.cfg.retention_days,
        d.row.created_at,
    )
    .await?;
    let payload = serde_json::from_str::<serde_json::Value>(&d.payload)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| d.payload.clone());
    let request_headers = d.request_headers.unwrap_or_default();
    let curl = curl_command("POST", &d.row.target_url, &request_headers, &d.payload);
    let attempts = deliveries::attempts_of(
        &ctx.pool,
        d.row.project_id,
        &d.row.event_id,
        d.row.endpoint_id,
    )
    .await?;
    Ok(DeliveryDetail {
        row: d.row.explain_among(&attempts),
        payload,
        request_headers,
        response_headers: d.response_headers.unwrap_or_default(),
        response_body: d.response_body,
        erased: d.erased,
        attempts,
        curl,
    })
}

#[server(endpoint = "retry_delivery")]
pub async fn retry_delivery(
    project_id: ProjectId,
    id: AttemptId,
) -> Result<DeliveryRow, ServerFnError> {
    use crate::{auth::access_to, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = access_to(project_id, Action::Retry).await?;
    Ok(use_cases::deliveries::retry(&ctx.pool, &access, id).await?)
}

/// Redirects to the given bin (its id or URL), or to a new one.
#[server(endpoint = "redirect_delivery")]
pub async fn redirect_delivery(
    project_id: ProjectId,
    id: AttemptId,
    bin: Option<String>,
) -> Result<(DeliveryRow, String), ServerFnError> {
    use crate::{auth::access_to, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = access_to(project_id, Action::Redirect).await?;
    Ok(use_cases::deliveries::redirect(&ctx.pool, &ctx.cfg, &access, id, bin.as_deref()).await?)
}

/// Fresh state of some rows (live status updates after Retry / Redirect).
#[server(endpoint = "refresh_rows")]
pub async fn refresh_rows(
    project_id: ProjectId,
    ids: Vec<i64>,
) -> Result<Vec<DeliveryRow>, ServerFnError> {
    use crate::{auth::access_to, core::permissions::Action, ctx::server_ctx, db::deliveries};
    let ctx = server_ctx()?;
    let access = access_to(project_id, Action::ReadDeliveries).await?;
    let ids: Vec<AttemptId> = ids.into_iter().take(50).map(AttemptId::new).collect();
    let rows = deliveries::get_rows(&ctx.pool, &access, &ids).await?;
    Ok(rows.into_iter().map(DeliveryRow::explain_listed).collect())
}

/// How many attempts newer than the newest one shown match the view (at most 100): the
/// list's "N new" bar asks every few seconds while it shows the first page.
#[server(endpoint = "count_newer")]
pub async fn count_newer(
    #[server(default)] filter: DeliveryFilter,
    after_id: i64,
    after_at: chrono::DateTime<chrono::Utc>,
) -> Result<i64, ServerFnError> {
    use crate::{ctx::server_ctx, db::deliveries};
    let ctx = server_ctx()?;
    let (access, days) = view_window(filter.project).await?;
    Ok(deliveries::count_newer(&ctx.pool, &access, &filter, days, (after_at, after_id)).await?)
}

/// Reading the list: the access to the project the view names and that project's window
/// in days.
#[cfg(feature = "ssr")]
async fn view_window(
    project: Option<ProjectId>,
) -> Result<(crate::auth::Access, u32), ServerFnError> {
    let ctx = crate::ctx::server_ctx()?;
    let access = view_access(project, crate::core::permissions::Action::ReadDeliveries).await?;
    let days =
        crate::db::projects::window_days(&ctx.pool, access.project_id, ctx.cfg.retention_days)
            .await?;
    Ok((access, days))
}

/// The access a view of the list asks for: the project it names, or the session's.
#[cfg(feature = "ssr")]
async fn view_access(
    project: Option<ProjectId>,
    action: crate::core::permissions::Action,
) -> Result<crate::auth::Access, ServerFnError> {
    match project {
        Some(p) => crate::auth::access_to(p, action).await,
        None => crate::auth::current_access(action).await,
    }
}

/// What the filter bar offers: the project's endpoints and the event types it has seen.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FilterOptions {
    pub project_id: ProjectId,
    pub endpoints: Vec<(i64, String)>,
    pub event_types: Vec<String>,
    /// How many days of history the project has (its window, within the server's).
    pub retention_days: u32,
}

#[server(endpoint = "delivery_filter_options")]
pub async fn delivery_filter_options(
    project: Option<ProjectId>,
) -> Result<FilterOptions, ServerFnError> {
    use crate::{core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = view_access(project, Action::ReadDeliveries).await?;
    let endpoints = crate::db::endpoints::names(&ctx.pool, access.project_id).await?;
    let days =
        crate::db::projects::window_days(&ctx.pool, access.project_id, ctx.cfg.retention_days)
            .await?;
    let event_types = crate::db::events::recent_types(&ctx.pool, access.project_id, days).await?;
    Ok(FilterOptions {
        project_id: access.project_id,
        endpoints,
        event_types,
        retention_days: days,
    })
}

/// How many events "Retry all matching" would send for this view.
#[server(endpoint = "preview_replay")]
pub async fn preview_replay(
    #[server(default)] filter: DeliveryFilter,
) -> Result<i64, ServerFnError> {
    use crate::{core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = view_access(filter.project, Action::Replay).await?;
    Ok(use_cases::replays::preview(&ctx.pool, &ctx.cfg, &access, &filter).await?)
}

#[server(endpoint = "start_replay")]
pub async fn start_replay(
    #[server(default)] filter: DeliveryFilter,
) -> Result<ReplayProgress, ServerFnError> {
    use crate::{core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = view_access(filter.project, Action::Replay).await?;
    Ok(use_cases::replays::start(&ctx.pool, &ctx.cfg, &access, &filter).await?)
}

#[server(endpoint = "get_replay_progress")]
pub async fn get_replay_progress(id: i64) -> Result<ReplayProgress, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadDeliveries).await?;
    Ok(use_cases::replays::progress(&ctx.pool, &access, id).await?)
}

#[server(endpoint = "cancel_replay")]
pub async fn cancel_replay(id: i64) -> Result<ReplayProgress, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, use_cases};
    let ctx = server_ctx()?;
    let access = current_access(Action::Replay).await?;
    Ok(use_cases::replays::cancel(&ctx.pool, &access, id).await?)
}
