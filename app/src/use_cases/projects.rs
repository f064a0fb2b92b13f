//! The operator's projects: made, changed and deleted through the operator API (and the
//! same rules for anything else that writes them). Every field given is checked here
//! ([`crate::core::operator`]) before [`crate::db::tenants`] stores it.

use crate::core::ProjectId;
use sqlx::PgPool;

use chrono::{DateTime, Utc};

use crate::{
    auth::Access,
    core::{
        operator::{
            check_accent, check_frame_ancestors, check_limit_overrides, check_logo_url,
            check_optional_text, check_text, link_lifetime, PortalRole,
        },
        ratelimit::Plan,
    },
    db::{
        api_keys, audit,
        portal::{self, PortalUser},
        projects, tenants,
        tenants::{Tenant, TenantFields},
        users,
    },
    error::{AppError, AppResult},
    model::Brand,
};

/// A project's fields as a request gives them: any subset; `limits` replaces the
/// overrides whole.
#[derive(Debug, Default)]
pub struct ProjectInput {
    pub name: Option<String>,
    pub uid: Option<String>,
    pub plan: Option<String>,
    /// The overrides by limit name (SPEC "Limits"), as JSON.
    pub limits: Option<serde_json::Value>,
    pub frame_ancestors: Option<Vec<String>>,
    pub brand: Option<BrandInput>,
    /// Attempts pass W3C trace context on to receivers.
    pub trace_propagation: Option<bool>,
}

#[derive(Debug, Default)]
pub struct BrandInput {
    pub name: Option<String>,
    pub accent: Option<String>,
    pub logo_url: Option<String>,
}

pub async fn create(pool: &PgPool, input: ProjectInput) -> AppResult<Tenant> {
    tenants::create(pool, &fields(input)?).await
}

pub async fn update(pool: &PgPool, id: ProjectId, input: ProjectInput) -> AppResult<Tenant> {
    tenants::update(pool, id, &fields(input)?).await
}

/// The project is gone at once: its id answers 404, its keys and sessions stop working,
/// nothing more is sent for it. Its data is purged in the background.
pub async fn delete(pool: &PgPool, id: ProjectId) -> AppResult<()> {
    tenants::delete(pool, id).await
}

/// A project made from the command line: its owner (made, or their password reset) and
/// a first API key. Returns the project's id and the key, shown this once.
pub async fn create_with_owner(
    pool: &PgPool,
    name: &str,
    plan: &str,
    owner_email: &str,
    owner_password: &str,
) -> AppResult<(i64, String)> {
    let owner = users::upsert(pool, owner_email, owner_password, "user").await?;
    let project = projects::create(pool, name, plan, owner.id).await?;
    let (key, _) = api_keys::create(pool, project.id, "created by create-project").await?;
    Ok((project.id.get(), key))
}

/// Who a portal link signs in, as the operator names them.
#[derive(Debug)]
pub struct PortalLinkInput {
    pub user_id: String,
    pub email: Option<String>,
    pub name: Option<String>,
    pub role: String,
    /// Seconds; the default lifetime when absent.
    pub expires_in: Option<i64>,
}

/// A single-use sign-in link into the project's portal (audited in the project's log);
/// returns the link's token and when it expires.
pub async fn portal_link(
    pool: &PgPool,
    access: &Access,
    input: PortalLinkInput,
    created_by: &str,
) -> AppResult<(String, DateTime<Utc>)> {
    let role = PortalRole::parse(&input.role)
        .ok_or_else(|| AppError::Invalid("role: owner, member or viewer".into()))?;
    let lifetime = link_lifetime(input.expires_in).map_err(AppError::Invalid)?;
    let text = |field: &str, v: Option<String>, max: usize| {
        check_optional_text(field, v, max).map_err(AppError::Invalid)
    };
    let user = PortalUser {
        id: check_text("user.id", &input.user_id, 255).map_err(AppError::Invalid)?,
        email: text("user.email", input.email, 320)?,
        name: text("user.name", input.name, 200)?,
    };
    let project = access.project_id;
    let (token, expires_at) =
        portal::create_link(pool, project, &user, role, lifetime, created_by).await?;
    let detail = serde_json::json!({ "role": role.as_str(), "expires_at": expires_at });
    let target = format!("portal:{}", user.id);
    audit::record(pool, access, "portal.link", &target, detail).await?;
    Ok((token, expires_at))
}

fn brand(b: BrandInput) -> AppResult<Brand> {
    let name = (b.name.map(|n| check_text("brand.name", &n, 100)))
        .transpose()
        .map_err(AppError::Invalid)?;
    if let Some(a) = &b.accent {
        check_accent(a).map_err(AppError::Invalid)?;
    }
    if let Some(l) = &b.logo_url {
        check_logo_url(l).map_err(AppError::Invalid)?;
    }
    Ok(Brand {
        name,
        accent: b.accent,
        logo_url: b.logo_url,
    })
}

/// Checks every field given; returns what to store.
fn fields(input: ProjectInput) -> AppResult<TenantFields> {
    let text = |field: &str, v: Option<String>, max: usize| {
        check_optional_text(field, v, max).map_err(AppError::Invalid)
    };
    if let Some(p) = &input.plan {
        Plan::parse(p).ok_or_else(|| AppError::Invalid("plan: trial or business".into()))?;
    }
    let overrides = (input.limits)
        .map(|v| check_limit_overrides(&v).map(|_| v))
        .transpose()
        .map_err(AppError::Invalid)?;
    let frame_ancestors = (input.frame_ancestors)
        .map(|list| check_frame_ancestors(&list))
        .transpose()
        .map_err(AppError::Invalid)?;
    Ok(TenantFields {
        name: text("name", input.name, 200)?,
        uid: text("uid", input.uid, 255)?.map(Some),
        plan: input.plan,
        overrides,
        frame_ancestors,
        brand: input.brand.map(brand).transpose()?,
        trace_propagation: input.trace_propagation,
    })
}
