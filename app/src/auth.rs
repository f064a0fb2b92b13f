//! Sign-in, sessions and the authorization layer. Every server function that touches a
//! project's data first turns the session into an [`Access`] for that project; a project
//! the user may not see is "not found", exactly like one that does not exist.

use leptos::prelude::*;

use crate::model::Viewer;

#[cfg(feature = "ssr")]
pub use server_side::*;

#[cfg(feature = "ssr")]
mod server_side {
    use leptos::prelude::*;
    use sqlx::PgPool;
    use tower_sessions::Session;

    use crate::{
        ctx::server_ctx,
        db::{projects, users, users::User},
        error::{AppError, AppResult},
    };

    pub const USER_KEY: &str = "user_id";
    pub const PROJECT_KEY: &str = "project_id";

    /// Proof that `user_id` may act on `project_id`. Only [`authorize`] makes one.
    #[derive(Clone, Debug)]
    #[non_exhaustive]
    pub struct Access {
        pub user_id: i64,
        pub email: String,
        pub is_support: bool,
        pub project_id: i64,
    }

    pub async fn authorize(pool: &PgPool, user: &User, project_id: i64) -> AppResult<Access> {
        let visible = if user.is_support() {
            projects::get(pool, project_id).await?.is_some()
        } else {
            projects::is_member(pool, project_id, user.id).await?
        };
        if !visible {
            return Err(AppError::NotFound);
        }
        Ok(Access {
            user_id: user.id,
            email: user.email.clone(),
            is_support: user.is_support(),
            project_id,
        })
    }

    /// An access made outside a session (the CLI, tests, the public API after key checks).
    pub fn system_access(project_id: i64, actor: &str) -> Access {
        Access {
            user_id: 0,
            email: actor.to_string(),
            is_support: false,
            project_id,
        }
    }

    pub fn internal(e: impl std::fmt::Display) -> ServerFnError {
        ServerFnError::ServerError(e.to_string())
    }

    pub async fn session() -> Result<Session, ServerFnError> {
        leptos_axum::extract::<Session>()
            .await
            .map_err(|e| ServerFnError::ServerError(format!("session unavailable: {e}")))
    }

    pub async fn current_user() -> Result<Option<User>, ServerFnError> {
        let ctx = server_ctx()?;
        let session = session().await?;
        let Some(id) = session.get::<i64>(USER_KEY).await.ok().flatten() else {
            return Ok(None);
        };
        Ok(users::get(&ctx.pool, id).await?)
    }

    pub async fn require_user() -> Result<User, ServerFnError> {
        current_user()
            .await?
            .ok_or_else(|| AppError::Unauthorized("Please sign in again.".into()).into())
    }

    /// Access to a project named explicitly (a row's project, a link).
    pub async fn access_to(project_id: i64) -> Result<Access, ServerFnError> {
        let ctx = server_ctx()?;
        let user = require_user().await?;
        Ok(authorize(&ctx.pool, &user, project_id).await?)
    }

    /// Access to the project selected in the session (or the user's first project).
    pub async fn current_access() -> Result<Access, ServerFnError> {
        let ctx = server_ctx()?;
        let user = require_user().await?;
        let session = session().await?;
        if let Some(id) = session.get::<i64>(PROJECT_KEY).await.ok().flatten() {
            if let Ok(access) = authorize(&ctx.pool, &user, id).await {
                return Ok(access);
            }
        }
        let first = projects::visible_to(&ctx.pool, user.id, user.is_support())
            .await?
            .into_iter()
            .next()
            .ok_or(AppError::NotFound)?;
        Ok(authorize(&ctx.pool, &user, first.id).await?)
    }
}

#[server(endpoint = "get_viewer")]
pub async fn get_viewer() -> Result<Option<Viewer>, ServerFnError> {
    use crate::{ctx::server_ctx, db::projects};
    let ctx = server_ctx()?;
    let Some(user) = current_user().await? else {
        return Ok(None);
    };
    let projects = projects::visible_to(&ctx.pool, user.id, user.is_support()).await?;
    let current = match current_access().await {
        Ok(access) => projects.iter().find(|p| p.id == access.project_id).cloned(),
        Err(_) => None,
    };
    let is_support = user.is_support();
    let disabled_endpoints: Vec<(i64, String, String)> = match &current {
        Some(p) => {
            sqlx::query_as(
                "SELECT id, url, disabled_reason FROM endpoints
                 WHERE project_id = $1 AND NOT enabled AND deleted_at IS NULL AND disabled_reason LIKE 'auto:%'",
            )
            .bind(p.id)
            .fetch_all(&ctx.pool)
            .await?
        }
        None => Vec::new(),
    };
    Ok(Some(Viewer {
        user_id: user.id,
        email: user.email,
        is_support,
        projects,
        current,
        disabled_endpoints,
    }))
}

#[server(endpoint = "login")]
pub async fn login(email: String, password: String) -> Result<(), ServerFnError> {
    use crate::{
        core::ratelimit::window_start,
        ctx::server_ctx,
        db::{rate_counters, users},
    };
    let ctx = server_ctx()?;
    let ip = leptos_axum::extract::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .await
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default();
    // Failures are counted per email and per address over 15 minutes; past 5, every
    // attempt waits longer, and past 30 the door stays shut until the window ends.
    let window = window_start(chrono::Utc::now().timestamp()) / 900 * 900;
    let email_bucket = format!("login-email:{}", email.trim().to_lowercase());
    let ip_bucket = format!("login-ip:{ip}");
    let failures = rate_counters::current(&ctx.pool, &email_bucket, window)
        .await?
        .max(rate_counters::current(&ctx.pool, &ip_bucket, window).await?);
    if failures >= 30 {
        return Err(ServerFnError::ServerError(
            "Too many failed sign-ins. Try again in 15 minutes.".into(),
        ));
    }
    if failures >= 5 {
        tokio::time::sleep(std::time::Duration::from_millis(
            500 * (failures as u64 - 4).min(10),
        ))
        .await;
    }
    let user = users::find_by_email(&ctx.pool, &email).await?;
    let ok = match &user {
        Some(u) => users::verify_password(&password, &u.password_hash),
        None => {
            users::verify_password(&password, users::dummy_hash());
            false
        }
    };
    let Some(user) = user.filter(|_| ok) else {
        rate_counters::hit(&ctx.pool, &email_bucket, window).await?;
        rate_counters::hit(&ctx.pool, &ip_bucket, window).await?;
        return Err(ServerFnError::ServerError(
            "Wrong email or password.".into(),
        ));
    };
    rate_counters::clear(&ctx.pool, &email_bucket, window).await?;
    let session = session().await?;
    // A new id at sign-in: a session id planted before sign-in is worthless after it.
    session.cycle_id().await.map_err(internal)?;
    session.insert(USER_KEY, user.id).await.map_err(internal)?;
    leptos_axum::redirect("/developers");
    Ok(())
}

#[server(endpoint = "logout")]
pub async fn logout() -> Result<(), ServerFnError> {
    session().await?.flush().await.map_err(internal)?;
    leptos_axum::redirect("/login");
    Ok(())
}

#[server(endpoint = "switch_project")]
pub async fn switch_project(project_id: i64) -> Result<(), ServerFnError> {
    let access = access_to(project_id).await?;
    session()
        .await?
        .insert(PROJECT_KEY, access.project_id)
        .await
        .map_err(internal)?;
    Ok(())
}
