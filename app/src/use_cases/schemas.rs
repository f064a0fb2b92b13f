//! Event-type schemas: setting and removing one (checked, compiled off the async
//! workers, audited), and the check every ingested event passes against its type's
//! schema (see [`crate::core::schema`] for what a schema may cost).

use crate::core::ProjectId;
use std::sync::Arc;

use sqlx::PgPool;

use super::schema_gate as gate;
use crate::{
    auth::Access,
    core::{event_type::EventType, permissions::Action, schema},
    db::{audit, schemas, targets::TargetCache},
    error::{AppError, AppResult},
};

/// The project's schema state as the request's key lookup saw it: which cached
/// compilations are current, and whether there is anything to check at all.
#[derive(Clone, Copy, Debug)]
pub struct SchemaScope {
    pub project_id: ProjectId,
    pub endpoints_version: i64,
    pub event_schemas: i32,
}

/// Sets the type's schema (`true` when it is new); refused (422) if it does not compile
/// within the limits. The caller has already bounded the text to [`schema::MAX_BYTES`].
pub async fn set(
    pool: &PgPool,
    access: &Access,
    event_type: &EventType,
    text: &str,
) -> AppResult<(schemas::StoredSchema, bool)> {
    access.require(Action::EditSchemas)?;
    let owned = text.to_string();
    gate::run(access.project_id, move || {
        schema::compile(&owned).map(|_| ())
    })
    .await?
    .map_err(AppError::Invalid)?;
    let mut tx = pool.begin().await?;
    let (stored, created) =
        schemas::put(&mut tx, access.project_id, event_type.as_str(), text).await?;
    let action = if created {
        "schema.create"
    } else {
        "schema.update"
    };
    let detail = serde_json::json!({"version": stored.version, "bytes": text.len()});
    audit::record(&mut *tx, access, action, event_type.as_str(), detail).await?;
    tx.commit().await?;
    Ok((stored, created))
}

/// Tries a schema before it is set, as the dashboard's editor does while the owner types:
/// refused (422) if it does not compile, as [`set`] would; else what it says of `example`
/// (the type's latest event, as the catalogue shows it): `None` when it passes. Compiled
/// and checked under the project's schema gate, within the same budget as ingest.
pub async fn try_out(
    access: &Access,
    text: &str,
    example: Option<&str>,
) -> AppResult<Option<String>> {
    access.require(Action::EditSchemas)?;
    let (text, example) = (text.to_string(), example.map(str::to_string));
    gate::run(access.project_id, move || {
        let compiled = schema::compile(&text)?;
        let Some(example) = example else {
            return Ok(None);
        };
        let data: serde_json::Value =
            serde_json::from_str(&example).map_err(|e| format!("the example is not JSON ({e})"))?;
        Ok(compiled.check(&data))
    })
    .await?
    .map_err(AppError::Invalid)
}

/// Removes the type's schema: its events are no longer checked. Not found: 404.
pub async fn remove(pool: &PgPool, access: &Access, event_type: &EventType) -> AppResult<()> {
    access.require(Action::EditSchemas)?;
    let mut tx = pool.begin().await?;
    if !schemas::delete(&mut tx, access.project_id, event_type.as_str()).await? {
        return Err(AppError::NotFound);
    }
    let detail = serde_json::json!({});
    audit::record(
        &mut *tx,
        access,
        "schema.delete",
        event_type.as_str(),
        detail,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Refuses the first event whose `data` fails its type's schema (`at` prefixes the
/// message, `events[3].` in a batch). Items are (at, event type, data as JSON text).
/// A project without schemas costs nothing; otherwise each type's compiled schema is
/// kept for the project's version.
pub async fn conform(
    pool: &PgPool,
    cache: &Arc<TargetCache>,
    scope: SchemaScope,
    items: &[(String, &str, &str)],
) -> AppResult<()> {
    if scope.event_schemas == 0 {
        return Ok(());
    }
    let (project, version) = (scope.project_id, scope.endpoints_version);
    let mut work = Vec::new();
    for (at, t, data) in items {
        let compiled = match cache.schemas.get(project, version, t) {
            Some(s) => s,
            None => {
                let text = schemas::get(pool, project, t).await?.map(|s| s.schema);
                let s = match text {
                    Some(text) => gate::run(project, move || schema::stored(&text)).await?,
                    None => None,
                };
                cache.schemas.put(project, version, t, s.clone());
                s
            }
        };
        if let Some(compiled) = compiled {
            work.push((at.clone(), compiled, data.to_string()));
        }
    }
    if work.is_empty() {
        return Ok(());
    }
    gate::run(project, move || check_all(&work))
        .await?
        .map_err(AppError::Invalid)
}

/// Checks each event against its schema, once their summed cost is within the budget.
fn check_all(work: &[(String, Arc<schema::Schema>, String)]) -> Result<(), String> {
    let mut parsed = Vec::with_capacity(work.len());
    let mut cost = 0u64;
    for (at, compiled, data) in work {
        let value: serde_json::Value =
            serde_json::from_str(data).map_err(|e| format!("{at}data: {e}"))?;
        cost = cost.saturating_add(compiled.cost_of(&value));
        parsed.push((at, compiled, value));
    }
    if cost > schema::CHECK_BUDGET {
        return Err(schema::too_costly(cost));
    }
    for (at, compiled, value) in parsed {
        if let Some(failure) = compiled.check_within_budget(&value) {
            return Err(format!("{at}{failure}"));
        }
    }
    Ok(())
}
