//! Projects as the operator manages them: made, found by the operator's own id, changed,
//! and deleted (gone at once for every reader, purged in bounded batches afterwards).

use crate::core::ProjectId;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;

use crate::{
    core::cursor::Cursor,
    error::{AppError, AppResult},
    model::Brand,
};

/// A project with everything the operator set on it.
#[derive(Clone, Debug)]
pub struct Tenant {
    pub id: ProjectId,
    pub uid: Option<String>,
    pub name: String,
    pub plan: String,
    /// The operator's overrides of the project's limits, as set.
    pub overrides: Value,
    pub frame_ancestors: Vec<String>,
    pub brand: Brand,
    /// Attempts pass W3C trace context on to receivers.
    pub trace_propagation: bool,
    pub created_at: DateTime<Utc>,
}

/// Values already checked by `core::operator`.
#[derive(Clone, Debug, Default)]
pub struct TenantFields {
    pub name: Option<String>,
    /// `Some(None)` clears the operator's id.
    pub uid: Option<Option<String>>,
    pub plan: Option<String>,
    pub overrides: Option<Value>,
    pub frame_ancestors: Option<Vec<String>>,
    pub brand: Option<Brand>,
    pub trace_propagation: Option<bool>,
}

/// A project's row as the queries below return it.
struct Row {
    id: ProjectId,
    uid: Option<String>,
    name: String,
    plan: String,
    limits: Value,
    frame_ancestors: Vec<String>,
    brand: sqlx::types::Json<Brand>,
    trace_propagation: bool,
    created_at: DateTime<Utc>,
}

fn tenant(r: Row) -> Tenant {
    Tenant {
        id: r.id,
        uid: r.uid,
        name: r.name,
        plan: r.plan,
        overrides: r.limits,
        frame_ancestors: r.frame_ancestors,
        brand: r.brand.0,
        trace_propagation: r.trace_propagation,
        created_at: r.created_at,
    }
}

/// A second live project with the same `uid` is a conflict, not an error.
fn uid_taken(e: sqlx::Error) -> AppError {
    match e.as_database_error().and_then(|d| d.code()) {
        Some(code) if code == "23505" => {
            AppError::Conflict("a project with this uid exists".into())
        }
        _ => e.into(),
    }
}

pub async fn create(pool: &PgPool, f: &TenantFields) -> AppResult<Tenant> {
    let row = sqlx::query_as!(
        Row,
        r#"INSERT INTO projects (name, uid, plan, limits, frame_ancestors, brand, trace_propagation)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, uid, name, plan, limits, frame_ancestors, brand AS "brand: sqlx::types::Json<Brand>",
                trace_propagation, created_at AS "created_at: DateTime<Utc>""#,
        f.name.as_deref().unwrap_or("Untitled"),
        f.uid.clone().flatten(),
        f.plan.as_deref().unwrap_or("trial"),
        f.overrides
            .clone()
            .unwrap_or_else(|| Value::Object(Default::default())),
        &f.frame_ancestors.clone().unwrap_or_default(),
        sqlx::types::Json(f.brand.clone().unwrap_or_default()) as _,
        f.trace_propagation.unwrap_or(true),
    )
    .fetch_one(pool)
    .await
    .map_err(uid_taken)?;
    Ok(tenant(row))
}

pub async fn get(pool: &PgPool, id: ProjectId) -> AppResult<Tenant> {
    let row = sqlx::query_as!(
        Row,
        r#"SELECT id, uid, name, plan, limits, frame_ancestors, brand AS "brand: sqlx::types::Json<Brand>",
                trace_propagation, created_at AS "created_at: DateTime<Utc>" FROM projects WHERE id = $1 AND deleted_at IS NULL"#,
        id.get(),
    )
    .fetch_optional(pool)
    .await?;
    row.map(tenant).ok_or(AppError::NotFound)
}

/// Live projects oldest first, after `after`, at most `limit` (`uid` picks one).
pub async fn list(
    pool: &PgPool,
    uid: Option<&str>,
    after: Option<Cursor>,
    limit: i64,
) -> AppResult<Vec<Tenant>> {
    let after = after.unwrap_or(Cursor {
        created_at: DateTime::<Utc>::UNIX_EPOCH,
        id: 0,
    });
    let rows = sqlx::query_as!(
        Row,
        r#"SELECT id, uid, name, plan, limits, frame_ancestors, brand AS "brand: sqlx::types::Json<Brand>",
                trace_propagation, created_at AS "created_at: DateTime<Utc>" FROM projects
          WHERE deleted_at IS NULL AND ($1::text IS NULL OR uid = $1)
            AND (created_at, id) > ($2, $3)
          ORDER BY created_at, id LIMIT $4"#,
        uid,
        after.created_at as _,
        after.id,
        limit,
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(tenant).collect())
}

pub async fn update(pool: &PgPool, id: ProjectId, f: &TenantFields) -> AppResult<Tenant> {
    let row = sqlx::query_as!(
        Row,
        r#"UPDATE projects SET
            name = coalesce($2, name),
            uid = CASE WHEN $3 THEN $4 ELSE uid END,
            plan = coalesce($5, plan),
            limits = coalesce($6, limits),
            frame_ancestors = coalesce($7, frame_ancestors),
            brand = coalesce($8, brand),
            trace_propagation = coalesce($9, trace_propagation)
          WHERE id = $1 AND deleted_at IS NULL RETURNING id, uid, name, plan, limits, frame_ancestors, brand AS "brand: sqlx::types::Json<Brand>",
                trace_propagation, created_at AS "created_at: DateTime<Utc>""#,
        id.get(),
        f.name.as_deref(),
        f.uid.is_some(),
        f.uid.clone().flatten(),
        f.plan.as_deref(),
        f.overrides.as_ref(),
        f.frame_ancestors.as_deref(),
        f.brand.clone().map(sqlx::types::Json) as _,
        f.trace_propagation,
    )
    .fetch_optional(pool)
    .await
    .map_err(uid_taken)?;
    row.map(tenant).ok_or(AppError::NotFound)
}

/// Deletes a project for every reader at once: its keys revoked, its members, invitations
/// and portal sessions gone, its endpoints deleted (their waiting attempts parked, so
/// nothing more is sent), its copies in inspector bins (Redirects) gone, since a bin is
/// read by whoever holds its address. The data itself goes in the background
/// ([`purge_step`]).
pub async fn delete(pool: &PgPool, id: ProjectId) -> AppResult<()> {
    let mut tx = pool.begin().await?;
    let found = sqlx::query!(
        "UPDATE projects SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL",
        id.get()
    )
    .execute(&mut *tx)
    .await?;
    if found.rows_affected() == 0 {
        return Err(AppError::NotFound);
    }
    sqlx::query!(
        "UPDATE api_keys SET revoked_at = now() WHERE project_id = $1 AND revoked_at IS NULL",
        id.get()
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        "DELETE FROM portal_sessions WHERE project_id = $1",
        id.get()
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("DELETE FROM portal_links WHERE project_id = $1", id.get())
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM invitations WHERE project_id = $1", id.get())
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM memberships WHERE project_id = $1", id.get())
        .execute(&mut *tx)
        .await?;
    sqlx::query!(
        "UPDATE endpoints SET deleted_at = now() WHERE project_id = $1 AND deleted_at IS NULL",
        id.get()
    )
    .execute(&mut *tx)
    .await?;
    // At most what the inspector's storage budget lets a project keep.
    sqlx::query!(
        "DELETE FROM bin_requests WHERE source = $1 AND source LIKE 'project:%'",
        crate::core::capture_source::CaptureSource::Project(id.get()).usage_key()
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Purges up to `batch` rows of the longest-deleted project; returns the rows removed
/// (0 when no deleted project is left).
pub async fn purge_step(pool: &PgPool, batch: i32) -> AppResult<i64> {
    Ok(sqlx::query_scalar!(
        r#"SELECT coalesce(posthorn_purge_project(id, $1), 0) AS "removed!" FROM projects
          WHERE deleted_at IS NOT NULL ORDER BY deleted_at LIMIT 1"#,
        batch,
    )
    .fetch_optional(pool)
    .await?
    .unwrap_or(0))
}
