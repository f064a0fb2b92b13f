//! The catalogue's schema editor: a type's schema read, tried while it is typed, set and
//! removed, through the same use case as `PUT /public/v1/event-types/{type}/schema`.

use leptos::prelude::*;

/// The type's schema as stored (indented for editing), or none.
#[server(endpoint = "get_event_schema")]
pub async fn get_event_schema(event_type: String) -> Result<Option<String>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, db::schemas};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadCatalogue).await?;
    let text = schemas::get(&ctx.pool, access.project_id, &event_type).await?;
    Ok(text.map(|s| crate::core::text::indent_json(&s.schema).unwrap_or(s.schema)))
}

/// Compiles `schema` and checks `example` (the type's latest event) against it: an error
/// when the schema would be refused, else the example's first failure (none: it passes).
#[server(endpoint = "try_event_schema")]
pub async fn try_event_schema(
    schema: String,
    example: Option<String>,
) -> Result<Option<String>, ServerFnError> {
    use crate::{auth::current_access, core::payload, core::permissions::Action, use_cases};
    let access = current_access(Action::EditSchemas).await?;
    // An example larger than any event could be is not the type's.
    let example = example.filter(|e| e.len() <= payload::MAX_BODY);
    Ok(use_cases::schemas::try_out(&access, &schema, example.as_deref()).await?)
}

/// Sets the type's schema (audited); the new version.
#[server(endpoint = "set_event_schema")]
pub async fn set_event_schema(event_type: String, schema: String) -> Result<i32, ServerFnError> {
    use crate::{
        auth::current_access, core::event_type::EventType, core::permissions::Action,
        ctx::server_ctx, error::AppError, use_cases,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::EditSchemas).await?;
    let t = EventType::parse(&event_type).map_err(AppError::Invalid)?;
    let (stored, _) = use_cases::schemas::set(&ctx.pool, &access, &t, &schema).await?;
    Ok(stored.version)
}

/// Removes the type's schema (audited): its events are no longer checked.
#[server(endpoint = "remove_event_schema")]
pub async fn remove_event_schema(event_type: String) -> Result<(), ServerFnError> {
    use crate::{
        auth::current_access, core::event_type::EventType, core::permissions::Action,
        ctx::server_ctx, error::AppError, use_cases,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::EditSchemas).await?;
    let t = EventType::parse(&event_type).map_err(AppError::Invalid)?;
    Ok(use_cases::schemas::remove(&ctx.pool, &access, &t).await?)
}
