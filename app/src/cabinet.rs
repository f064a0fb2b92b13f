//! Server functions behind the rest of the cabinet: endpoints, API keys, audit, event
//! catalogue, team. Each goes through the authorization layer first.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::{ApiKeyView, AuditEntry, DeliveryRow, EndpointView};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndpointStats {
    pub endpoint: EndpointView,
    pub attempts_24h: i64,
    pub succeeded_24h: i64,
    pub p95_ms: Option<f64>,
    /// Success ratio per hour over the last 24 hours (None: no attempts that hour).
    pub hourly: Vec<Option<f64>>,
    /// Failed attempts of the last 24 hours grouped by response code or error kind,
    /// most frequent first: an incident read at a glance.
    pub failures: Vec<(String, i64)>,
    /// This endpoint receives the project's `endpoint.disabled` notices.
    pub is_ops: bool,
}

#[server(endpoint = "list_endpoints")]
pub async fn list_endpoints() -> Result<Vec<EndpointStats>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, db::endpoints};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadEndpoints).await?;
    let list = endpoints::list(&ctx.pool, &access).await?;
    let ops: Option<i64> = sqlx::query_scalar("SELECT ops_endpoint_id FROM projects WHERE id = $1")
        .bind(access.project_id)
        .fetch_one(&ctx.pool)
        .await?;
    let rows: Vec<(i64, i32, i64, i64)> = sqlx::query_as(
        "SELECT endpoint_id, (extract(epoch FROM now() - created_at) / 3600)::int AS hour,
                count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'dead_letter')),
                count(*) FILTER (WHERE status = 'succeeded')
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours' AND trigger <> 'redirect'
         GROUP BY 1, 2",
    )
    .bind(access.project_id)
    .fetch_all(&ctx.pool)
    .await?;
    let p95: Vec<(i64, Option<f64>)> = sqlx::query_as(
        "SELECT endpoint_id, percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms)
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours'
           AND trigger <> 'redirect' AND duration_ms IS NOT NULL GROUP BY 1",
    )
    .bind(access.project_id)
    .fetch_all(&ctx.pool)
    .await?;
    let failures: Vec<(i64, String, i64)> = sqlx::query_as(
        "SELECT endpoint_id, coalesce(response_status::text, error_kind, 'unknown'), count(*)
         FROM deliveries WHERE project_id = $1 AND created_at > now() - interval '24 hours'
           AND trigger <> 'redirect' AND status IN ('failed', 'dead_letter')
         GROUP BY 1, 2 ORDER BY 3 DESC",
    )
    .bind(access.project_id)
    .fetch_all(&ctx.pool)
    .await?;
    Ok(list
        .into_iter()
        .map(|endpoint| {
            let mine: Vec<&(i64, i32, i64, i64)> =
                rows.iter().filter(|r| r.0 == endpoint.id).collect();
            let hourly = (0..24)
                .rev()
                .map(|h| {
                    mine.iter()
                        .find(|r| r.1 == h)
                        .filter(|r| r.2 > 0)
                        .map(|r| r.3 as f64 / r.2 as f64)
                })
                .collect();
            EndpointStats {
                attempts_24h: mine.iter().map(|r| r.2).sum(),
                succeeded_24h: mine.iter().map(|r| r.3).sum(),
                p95_ms: p95.iter().find(|p| p.0 == endpoint.id).and_then(|p| p.1),
                hourly,
                is_ops: ops == Some(endpoint.id),
                failures: failures
                    .iter()
                    .filter(|f| f.0 == endpoint.id)
                    .map(|f| (f.1.clone(), f.2))
                    .collect(),
                endpoint,
            }
        })
        .collect())
}

#[cfg(feature = "ssr")]
fn parse_types(text: &str) -> Result<Vec<String>, String> {
    let entries: Vec<String> = text
        .split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    crate::core::event_type::parse_subscription(&entries)
}

/// Creates an endpoint; returns its secret (shown once here, revealable later).
#[server(endpoint = "create_endpoint")]
pub async fn create_endpoint(
    url: String,
    event_types: String,
    description: String,
) -> Result<String, ServerFnError> {
    use crate::{
        auth::current_access,
        core::endpoint_url::parse_endpoint_url,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, endpoints},
        error::AppError,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::CreateEndpoint).await?;
    let url = parse_endpoint_url(&url).map_err(AppError::Invalid)?;
    let types = parse_types(&event_types).map_err(AppError::Invalid)?;
    let (ep, secret) = endpoints::create(
        &ctx.pool,
        &access,
        endpoints::NewEndpoint {
            url: url.as_str(),
            event_types: &types,
            description: &description,
            rate_limit: None,
        },
    )
    .await?;
    audit::record(
        &ctx.pool,
        &access,
        "endpoint.create",
        &format!("endpoint #{}", ep.id),
        serde_json::json!({"url": ep.url}),
    )
    .await?;
    Ok(secret)
}

#[server(endpoint = "update_endpoint")]
pub async fn update_endpoint(
    id: i64,
    url: Option<String>,
    event_types: Option<String>,
    enabled: Option<bool>,
    /// Attempts per second; "unlimited" (or empty) lifts the limit; absent leaves it as it is.
    #[server(default)]
    rate_limit: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{
        auth::current_access,
        core::endpoint_url::parse_endpoint_url,
        core::permissions::Action,
        core::throttle::parse_rate_limit_text,
        ctx::server_ctx,
        db::{audit, endpoints},
        error::AppError,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::EditEndpoint).await?;
    let rate_limit = rate_limit
        .map(|r| parse_rate_limit_text(&r))
        .transpose()
        .map_err(AppError::Invalid)?;
    let url = url
        .filter(|u| !u.trim().is_empty())
        .map(|u| parse_endpoint_url(&u).map(|u| u.to_string()))
        .transpose()
        .map_err(AppError::Invalid)?;
    let types = event_types
        .filter(|t| !t.trim().is_empty())
        .map(|t| parse_types(&t))
        .transpose()
        .map_err(AppError::Invalid)?;
    endpoints::update(
        &ctx.pool,
        &access,
        id,
        endpoints::EndpointPatch {
            url,
            event_types: types,
            description: None,
            enabled,
            rate_limit,
        },
    )
    .await?;
    let action = match enabled {
        Some(true) => "endpoint.enable",
        Some(false) => "endpoint.disable",
        None => "endpoint.edit",
    };
    audit::record(
        &ctx.pool,
        &access,
        action,
        &format!("endpoint #{id}"),
        match rate_limit {
            Some(limit) => serde_json::json!({ "rate_limit": limit }),
            None => serde_json::json!({}),
        },
    )
    .await?;
    Ok(())
}

/// Sets (with a value) or removes (without) one custom header of an endpoint; returns
/// the header names now set. Values are write-only: the cabinet never gets them back.
#[server(endpoint = "edit_endpoint_header")]
pub async fn edit_endpoint_header(
    id: i64,
    name: String,
    value: Option<String>,
) -> Result<Vec<String>, ServerFnError> {
    use crate::{
        auth::current_access,
        core::custom_headers::{parse_custom_headers, MAX_HEADERS},
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, endpoints},
        error::AppError,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::EditCustomHeaders).await?;
    let name = name.trim().to_string();
    let value = value.filter(|v| !v.is_empty());
    if let Some(v) = &value {
        parse_custom_headers(&[(name.clone(), v.clone())]).map_err(AppError::Invalid)?;
        let names = endpoints::custom_header_names(&ctx.pool, &access, id).await?;
        if names.len() >= MAX_HEADERS && !names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            return Err(AppError::Invalid(format!("at most {MAX_HEADERS} custom headers")).into());
        }
    }
    let names =
        endpoints::edit_custom_header(&ctx.pool, &access, id, &name, value.as_deref()).await?;
    audit::record(
        &ctx.pool,
        &access,
        if value.is_some() {
            "endpoint.header.set"
        } else {
            "endpoint.header.remove"
        },
        &format!("endpoint #{id}"),
        serde_json::json!({ "header": name }),
    )
    .await?;
    Ok(names)
}

/// Chooses the endpoint that receives `endpoint.disabled` notices for this project.
#[server(endpoint = "set_ops_endpoint")]
pub async fn set_ops_endpoint(id: i64) -> Result<(), ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, endpoints},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::SetOpsEndpoint).await?;
    endpoints::get(&ctx.pool, &access, id).await?;
    sqlx::query("UPDATE projects SET ops_endpoint_id = $2 WHERE id = $1")
        .bind(access.project_id)
        .bind(id)
        .execute(&ctx.pool)
        .await?;
    audit::record(
        &ctx.pool,
        &access,
        "ops_endpoint.set",
        &format!("endpoint #{id}"),
        serde_json::json!({}),
    )
    .await?;
    Ok(())
}

#[server(endpoint = "delete_endpoint")]
pub async fn delete_endpoint(id: i64) -> Result<(), ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, endpoints},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::DeleteEndpoint).await?;
    endpoints::delete(&ctx.pool, &access, id).await?;
    audit::record(
        &ctx.pool,
        &access,
        "endpoint.delete",
        &format!("endpoint #{id}"),
        serde_json::json!({}),
    )
    .await?;
    Ok(())
}

/// The current secret, on an explicit click; support staff never see secrets.
#[server(endpoint = "reveal_secret")]
pub async fn reveal_secret(id: i64) -> Result<String, ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, endpoints},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::RevealSecret).await?;
    let (secret, _) = endpoints::secrets(&ctx.pool, &access, id).await?;
    audit::record(
        &ctx.pool,
        &access,
        "secret.reveal",
        &format!("endpoint #{id}"),
        serde_json::json!({}),
    )
    .await?;
    Ok(secret)
}

#[server(endpoint = "rotate_secret")]
pub async fn rotate_secret(id: i64) -> Result<String, ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, endpoints},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::RotateSecret).await?;
    let secret = endpoints::rotate_secret(&ctx.pool, &access, id).await?;
    audit::record(
        &ctx.pool,
        &access,
        "secret.rotate",
        &format!("endpoint #{id}"),
        serde_json::json!({}),
    )
    .await?;
    Ok(secret)
}

/// Sends a `test.ping` event to one endpoint; returns the queued attempt.
#[server(endpoint = "test_send")]
pub async fn test_send(id: i64) -> Result<DeliveryRow, ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{audit, deliveries, endpoints},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::TestSend).await?;
    let ep = endpoints::get(&ctx.pool, &access, id).await?;
    let delivery_id = deliveries::test_send(&ctx.pool, &access, &ep).await?;
    audit::record(
        &ctx.pool,
        &access,
        "test_send",
        &format!("endpoint #{id}"),
        serde_json::json!({"delivery": delivery_id}),
    )
    .await?;
    Ok(deliveries::get_row(&ctx.pool, &access, delivery_id).await?)
}

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
        per_minute: plan.per_minute(),
        keys: api_keys::list(&ctx.pool, &access).await?,
    })
}

/// Returns the new key: the only time it is ever shown.
#[server(endpoint = "create_key")]
pub async fn create_key(name: String) -> Result<String, ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{api_keys, audit},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageKeys).await?;
    let name = if name.trim().is_empty() {
        "unnamed".to_string()
    } else {
        name.trim().chars().take(100).collect()
    };
    let (key, view) = api_keys::create(&ctx.pool, access.project_id, &name).await?;
    audit::record(
        &ctx.pool,
        &access,
        "api_key.create",
        &format!("key {}", view.prefix),
        serde_json::json!({"name": name}),
    )
    .await?;
    Ok(key)
}

#[server(endpoint = "revoke_key")]
pub async fn revoke_key(id: i64) -> Result<(), ServerFnError> {
    use crate::{
        auth::current_access,
        core::permissions::Action,
        ctx::server_ctx,
        db::{api_keys, audit},
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageKeys).await?;
    api_keys::revoke(&ctx.pool, &access, id).await?;
    audit::record(
        &ctx.pool,
        &access,
        "api_key.revoke",
        &format!("key #{id}"),
        serde_json::json!({}),
    )
    .await?;
    Ok(())
}

#[server(endpoint = "list_audit")]
pub async fn list_audit() -> Result<Vec<AuditEntry>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx, db::audit};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadAudit).await?;
    Ok(audit::list(&ctx.pool, &access, 500).await?)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventTypeInfo {
    pub event_type: String,
    pub count_14d: i64,
    pub last_seen: Option<DateTime<Utc>>,
    pub example: Option<String>,
    pub documented: Option<String>,
}

/// The platform's documented event types.
pub const DOCUMENTED_TYPES: [(&str, &str); 8] = [
    (
        "message.created",
        "A message was sent or received in a chat.",
    ),
    ("chat.opened", "A visitor opened a new chat."),
    ("contact.created", "A new contact was added."),
    (
        "payment.confirmed",
        "A payment was authorised by the provider.",
    ),
    ("payment.succeeded", "A payment was captured."),
    ("subscription.cancelled", "A subscription was cancelled."),
    (
        "endpoint.disabled",
        "An endpoint was disabled after failing for too long.",
    ),
    ("test.ping", "A test event sent from the cabinet."),
];

#[server(endpoint = "event_catalogue")]
pub async fn event_catalogue() -> Result<Vec<EventTypeInfo>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadCatalogue).await?;
    type Seen = (String, i64, Option<DateTime<Utc>>, Option<String>);
    let seen: Vec<Seen> = sqlx::query_as(
        "SELECT event_type, count(*), max(created_at),
                (SELECT data::text FROM events e2 WHERE e2.project_id = $1 AND e2.event_type = e.event_type ORDER BY created_at DESC LIMIT 1)
         FROM events e WHERE project_id = $1 AND created_at > now() - interval '14 days' GROUP BY event_type ORDER BY 2 DESC",
    )
    .bind(access.project_id)
    .fetch_all(&ctx.pool)
    .await?;
    let mut out: Vec<EventTypeInfo> = seen
        .into_iter()
        .map(|(t, n, last, ex)| EventTypeInfo {
            documented: DOCUMENTED_TYPES
                .iter()
                .find(|d| d.0 == t)
                .map(|d| d.1.to_string()),
            event_type: t,
            count_14d: n,
            last_seen: last,
            example: ex,
        })
        .collect();
    for (t, doc) in DOCUMENTED_TYPES {
        if !out.iter().any(|e| e.event_type == t) {
            out.push(EventTypeInfo {
                event_type: t.into(),
                count_14d: 0,
                last_seen: None,
                example: None,
                documented: Some(doc.into()),
            });
        }
    }
    Ok(out)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub email: String,
    pub role: String,
    pub since: DateTime<Utc>,
}

#[server(endpoint = "list_members")]
pub async fn list_members() -> Result<Vec<Member>, ServerFnError> {
    use crate::{auth::current_access, core::permissions::Action, ctx::server_ctx};
    let ctx = server_ctx()?;
    let access = current_access(Action::ReadTeam).await?;
    let rows: Vec<(String, String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT u.email, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.project_id = $1 ORDER BY m.created_at",
    )
    .bind(access.project_id)
    .fetch_all(&ctx.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(email, role, since)| Member { email, role, since })
        .collect())
}

/// Changes the signed-in user's password: guessed at no faster than sign-in allows,
/// and every other session of the user ends (this one continues under a new id).
#[server(endpoint = "change_password")]
pub async fn change_password(current: String, new_password: String) -> Result<(), ServerFnError> {
    use crate::{
        auth::{count_guess, guess_was_right, require_user, session, sign_in},
        ctx::server_ctx,
        db::users,
        error::AppError,
    };
    let ctx = server_ctx()?;
    let user = require_user().await?;
    let guess = count_guess(&ctx.pool, "password", &user.id.to_string()).await?;
    if !users::check_password(&current, &user.password_hash).await? {
        return Err(AppError::Invalid("The current password is wrong.".into()).into());
    }
    guess_was_right(&ctx.pool, guess).await?;
    let epoch = users::set_password(&ctx.pool, user.id, &new_password).await?;
    let user = users::User {
        session_epoch: epoch,
        ..user
    };
    sign_in(&session().await?, &user).await?;
    Ok(())
}

/// Invites someone by email; returns the one-time link (no mail server: the owner
/// passes it on). Owners only.
#[server(endpoint = "invite_member")]
pub async fn invite_member(email: String) -> Result<String, ServerFnError> {
    use crate::{
        auth::current_access, core::ids::new_token, core::permissions::Action, ctx::server_ctx,
        db::audit, error::AppError,
    };
    use sha2::{Digest, Sha256};
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageTeam).await?;
    let email = email.trim().to_lowercase();
    if !email.contains('@') || email.len() > 200 {
        return Err(AppError::Invalid("Enter an email address.".into()).into());
    }
    let token = new_token();
    sqlx::query(
        "INSERT INTO invitations (token_hash, project_id, email, role, created_by, expires_at)
         VALUES ($1, $2, $3, 'member', $4, now() + interval '7 days')",
    )
    .bind(Sha256::digest(token.as_bytes()).to_vec())
    .bind(access.project_id)
    .bind(&email)
    .bind(access.user_id)
    .execute(&ctx.pool)
    .await?;
    audit::record(
        &ctx.pool,
        &access,
        "member.invite",
        &email,
        serde_json::json!({}),
    )
    .await?;
    Ok(format!("{}/invite/{token}", ctx.cfg.public_url))
}

/// Removes a member; the last owner of a project cannot be removed.
#[server(endpoint = "remove_member")]
pub async fn remove_member(email: String) -> Result<(), ServerFnError> {
    use crate::{
        auth::current_access, core::permissions::Action, ctx::server_ctx, db::audit,
        error::AppError,
    };
    let ctx = server_ctx()?;
    let access = current_access(Action::ManageTeam).await?;
    let mut tx = ctx.pool.begin().await?;
    // Lock the project's memberships so two removals cannot both pass the check.
    let members: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT m.user_id, lower(u.email), m.role FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.project_id = $1 FOR UPDATE OF m",
    )
    .bind(access.project_id)
    .fetch_all(&mut *tx)
    .await?;
    let target = members
        .iter()
        .find(|m| m.1 == email.trim().to_lowercase())
        .ok_or(AppError::NotFound)?;
    if target.2 == "owner" && members.iter().filter(|m| m.2 == "owner").count() == 1 {
        return Err(
            AppError::Conflict("The last owner of a project cannot be removed.".into()).into(),
        );
    }
    sqlx::query("DELETE FROM memberships WHERE project_id = $1 AND user_id = $2")
        .bind(access.project_id)
        .bind(target.0)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    audit::record(
        &ctx.pool,
        &access,
        "member.remove",
        &email,
        serde_json::json!({}),
    )
    .await?;
    Ok(())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvitationView {
    pub project: String,
    pub email: String,
    pub has_account: bool,
    /// The visitor is signed in as the invited account (and so may join without a password).
    pub signed_in_as_invitee: bool,
}

#[server(endpoint = "get_invitation")]
pub async fn get_invitation(token: String) -> Result<InvitationView, ServerFnError> {
    use crate::{auth::current_user, ctx::server_ctx, error::AppError};
    use sha2::{Digest, Sha256};
    let ctx = server_ctx()?;
    let row: Option<(String, String, bool)> = sqlx::query_as(
        "SELECT p.name, i.email, EXISTS (SELECT 1 FROM users u WHERE lower(u.email) = i.email)
         FROM invitations i JOIN projects p ON p.id = i.project_id
         WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > now()",
    )
    .bind(Sha256::digest(token.as_bytes()).to_vec())
    .fetch_optional(&ctx.pool)
    .await?;
    let (project, email, has_account) = row
        .ok_or_else(|| AppError::Invalid("This invitation is unknown, used or expired.".into()))?;
    let signed_in_as_invitee = current_user()
        .await?
        .is_some_and(|u| u.email.eq_ignore_ascii_case(&email));
    Ok(InvitationView {
        project,
        email,
        has_account,
        signed_in_as_invitee,
    })
}

/// Accepts an invitation once and joins the project. A new account is made with the
/// password given; an existing account joins only from a session signed in as that
/// account: the invitation path never checks an existing account's password, so it
/// cannot be used to guess one.
#[server(endpoint = "accept_invitation")]
pub async fn accept_invitation(
    token: String,
    password: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{
        auth::{current_user, internal, session, sign_in, PROJECT_KEY},
        ctx::server_ctx,
        db::{projects, users},
        error::AppError,
    };
    use sha2::{Digest, Sha256};
    let ctx = server_ctx()?;
    let unknown = || AppError::Invalid("This invitation is unknown, used or expired.".into());
    let token_hash = Sha256::digest(token.as_bytes()).to_vec();
    let email: String = sqlx::query_scalar(
        "SELECT email FROM invitations WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()",
    )
    .bind(&token_hash)
    .fetch_optional(&ctx.pool)
    .await?
    .ok_or_else(unknown)?;
    let user = match users::find_by_email(&ctx.pool, &email).await? {
        Some(existing) => {
            let signed_in = current_user().await?;
            if signed_in.as_ref().map(|u| u.id) != Some(existing.id) {
                return Err(AppError::Unauthorized(format!(
                    "{email} already has an account: sign in as {email}, then open this link again."
                ))
                .into());
            }
            existing
        }
        None => {
            let password = password.unwrap_or_default();
            users::create(&ctx.pool, &email, &password, "user").await?
        }
    };
    let mut tx = ctx.pool.begin().await?;
    let invite: Option<(i64, String)> = sqlx::query_as(
        "UPDATE invitations SET used_at = now()
         WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
         RETURNING project_id, role",
    )
    .bind(&token_hash)
    .fetch_optional(&mut *tx)
    .await?;
    let (project_id, role) = invite.ok_or_else(unknown)?;
    projects::add_member(&mut tx, project_id, user.id, &role).await?;
    tx.commit().await?;
    let session = session().await?;
    sign_in(&session, &user).await?;
    session
        .insert(PROJECT_KEY, project_id)
        .await
        .map_err(internal)?;
    leptos_axum::redirect("/developers");
    Ok(())
}
