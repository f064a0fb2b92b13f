//! An endpoint's filter from its card: saved and tried by plain forms (no script), shown
//! with the recent events it kept out (see `components::filter_card`).

use crate::core::EndpointId;
use leptos::prelude::*;

/// Saves an endpoint's filter (checked as the API checks it) or, empty, removes it.
/// Answers with a redirect back to the page: clean on success, with `filter_error` and
/// `filter_endpoint` otherwise (the text tried stays in the form through `try_filter`).
#[server(endpoint = "set_endpoint_filter")]
pub async fn set_endpoint_filter(id: EndpointId, filter: String) -> Result<(), ServerFnError> {
    use crate::{core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = crate::auth::endpoint_access(id, Action::EditEndpoint).await?;
    let text = filter.trim().to_string();
    let result: Result<(), ServerFnError> = async {
        crate::use_cases::endpoints::change(
            &ctx.pool,
            &access,
            id,
            crate::use_cases::endpoints::EndpointChange {
                filter: Some((!text.is_empty()).then(|| text.clone())),
                ..Default::default()
            },
        )
        .await?;
        Ok(())
    }
    .await;
    let notes = match result {
        Ok(()) => Vec::new(),
        Err(e) => vec![
            ("filter_endpoint", id.to_string()),
            (
                "filter_error",
                crate::components::widgets::error_text(&e)
                    .chars()
                    .take(300)
                    .collect(),
            ),
            ("try_filter", text.chars().take(1024).collect()),
        ],
    };
    back(&notes).await;
    Ok(())
}

/// Returns to the page with the filter to try on the endpoint's recent events (nothing is
/// saved; the page evaluates it as it renders). Trying is part of editing: only those who
/// may change the filter are offered it.
#[server(endpoint = "try_endpoint_filter")]
pub async fn try_endpoint_filter(id: EndpointId, filter: String) -> Result<(), ServerFnError> {
    crate::auth::endpoint_access(id, crate::core::permissions::Action::EditEndpoint).await?;
    let text: String = filter.trim().chars().take(1024).collect();
    back(&[("try_endpoint", id.to_string()), ("try_filter", text)]).await;
    Ok(())
}

/// The same try, answered in place: the HTML of what the filter would do to the
/// endpoint's recent events (the card puts it under its form, with no page load).
#[server(endpoint = "try_endpoint_filter_here")]
pub async fn try_endpoint_filter_here(
    id: EndpointId,
    filter: String,
) -> Result<String, ServerFnError> {
    use crate::{components::filter_card, ctx::server_ctx, db::projects};
    let ctx = server_ctx()?;
    let access =
        crate::auth::endpoint_access(id, crate::core::permissions::Action::EditEndpoint).await?;
    let text: String = filter.trim().chars().take(1024).collect();
    let types = crate::db::endpoints::get(&ctx.pool, &access, id)
        .await?
        .event_types;
    let days = projects::window_days(&ctx.pool, access.project_id, ctx.cfg.retention_days).await?;
    let tried = try_on_recent(&ctx.pool, &access, &types, &text, days).await?;
    Ok(filter_card::tried(&tried, chrono::Utc::now()))
}

/// What `text` would do to the endpoint's recent events of `types`, or why it does not
/// compile.
#[cfg(feature = "ssr")]
async fn try_on_recent(
    pool: &sqlx::PgPool,
    access: &crate::auth::Access,
    types: &[String],
    text: &str,
    days: u32,
) -> Result<crate::components::filter_card::Tried, ServerFnError> {
    use crate::{components::filter_card, core::filter};
    let outcome = match filter::compile(text) {
        Err(e) => Err(e),
        Ok(f) => Ok(crate::db::filtered::recent_of_types(
            pool,
            access.project_id,
            types,
            days,
            filter_card::LISTED,
        )
        .await?
        .into_iter()
        .map(|r| filter_card::CardEvent {
            skipped: f
                .eval(&filter::Input::parse(
                    &r.event_type,
                    &r.data,
                    r.subjects.as_deref().unwrap_or_default(),
                ))
                .reason(),
            event_id: r.event_id.to_string(),
            event_type: r.event_type,
            created_at: r.created_at,
        })
        .collect()),
    };
    Ok(filter_card::Tried { outcome })
}

#[cfg(feature = "ssr")]
async fn back(notes: &[(&str, String)]) {
    let headers: http::HeaderMap = leptos_axum::extract().await.unwrap_or_default();
    let referer = headers
        .get(http::header::REFERER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("/developers/webhooks");
    leptos_axum::redirect(&crate::core::next_path::back_with(referer, notes));
}

/// What the endpoints page shows of every endpoint's filter, built once per page.
#[cfg(feature = "ssr")]
pub(crate) struct FilterCards {
    kept_out: Vec<crate::db::filtered::KeptOut>,
    query: Vec<(String, String)>,
    tried: Option<(EndpointId, crate::components::filter_card::Tried)>,
    editable: bool,
}

#[cfg(feature = "ssr")]
impl FilterCards {
    pub(crate) async fn read(
        pool: &sqlx::PgPool,
        access: &crate::auth::Access,
        list: &[crate::model::EndpointView],
        query: &[(String, String)],
        days: u32,
    ) -> Result<FilterCards, ServerFnError> {
        let kept_out = crate::db::filtered::kept_out(pool, access.project_id, days).await?;
        let named = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let editable = access
            .require(crate::core::permissions::Action::EditEndpoint)
            .is_ok();
        let mut tried = None;
        // Only an editor is shown a try, so only for one is it evaluated.
        let endpoint = named("try_endpoint")
            .filter(|_| editable)
            .and_then(|id| id.parse::<i64>().ok())
            .and_then(|id| list.iter().find(|e| e.id == EndpointId::new(id)));
        if let (Some(ep), Some(text)) = (endpoint, named("try_filter")) {
            tried = Some((
                ep.id,
                try_on_recent(pool, access, &ep.event_types, text, days).await?,
            ));
        }
        Ok(FilterCards {
            kept_out,
            query: query.to_vec(),
            tried,
            editable,
        })
    }

    /// The card's filter block for one endpoint.
    pub(crate) fn html(
        &mut self,
        ep: &crate::model::EndpointView,
        now: chrono::DateTime<chrono::Utc>,
    ) -> String {
        use crate::components::filter_card;
        use leptos::server_fn::ServerFn;
        let kept_out = self
            .kept_out
            .iter()
            .filter_map(|k| {
                let s = k.filtered_out.iter().find(|s| s.endpoint_id == ep.id)?;
                Some(filter_card::CardEvent {
                    event_id: k.event_id.to_string(),
                    event_type: k.event_type.clone(),
                    created_at: k.created_at,
                    skipped: Some(s.reason.clone()),
                })
            })
            .take(filter_card::LISTED as usize)
            .collect();
        let named = |k: &str| {
            self.query
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        let id = ep.id.to_string();
        let error = (named("filter_endpoint").as_ref() == Some(&id))
            .then(|| named("filter_error"))
            .flatten();
        let draft = (named("filter_endpoint").as_ref() == Some(&id)
            || named("try_endpoint").as_ref() == Some(&id))
        .then(|| named("try_filter"))
        .flatten();
        let tried = match &self.tried {
            Some((id, _)) if *id == ep.id => self.tried.take().map(|(_, t)| t),
            _ => None,
        };
        filter_card::html(
            &filter_card::FilterCard {
                id: ep.id,
                filter: ep.filter.as_deref(),
                error: error.as_deref(),
                draft: draft.as_deref(),
                editable: self.editable,
                save_action: SetEndpointFilter::url(),
                try_action: TryEndpointFilter::url(),
                kept_out,
                tried,
            },
            now,
        )
    }
}
