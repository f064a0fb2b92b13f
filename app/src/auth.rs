//! Sign-in, sessions and the authorization layer. Every server function that touches a
//! project's data first turns the session into an [`Access`] for that project; a project
//! the user may not see is "not found", exactly like one that does not exist.

use leptos::prelude::*;

use crate::model::Viewer;

#[cfg(feature = "ssr")]
pub use server_side::*;

#[cfg(feature = "ssr")]
mod server_side {
    use crate::core::{EndpointId, ProjectId, UserId};
    use leptos::prelude::*;
    use sqlx::PgPool;
    use tower_sessions::Session;

    use crate::{
        core::{
            permissions::{Action, Role},
            ratelimit::{address_bucket, sign_in_gate, SignInGate, SIGN_IN_WINDOW_SECS},
        },
        ctx::server_ctx,
        db::{memberships, projects, rate_counters, users, users::User},
        error::{AppError, AppResult},
    };

    pub const USER_KEY: &str = "user_id";
    pub const PROJECT_KEY: &str = "project_id";
    /// The user's `session_epoch` when this session signed in.
    pub const EPOCH_KEY: &str = "epoch";

    pub use crate::core::permissions::Access;

    /// Access to `project_id` for `action`: "not found" (404) for a project the user may
    /// not see, exactly like one that does not exist; 403 for a role that may see the
    /// project but not do this.
    pub async fn authorize(
        pool: &PgPool,
        user: &User,
        project_id: ProjectId,
        action: Action,
    ) -> AppResult<Access> {
        let role = if user.is_support() {
            projects::get(pool, project_id)
                .await?
                .map(|_| Role::Support)
        } else {
            memberships::role(pool, project_id, user.id)
                .await?
                .map(|r| {
                    if r == "owner" {
                        Role::Owner
                    } else {
                        Role::Member
                    }
                })
        };
        let role = role.ok_or(AppError::NotFound)?;
        let access = Access {
            user_id: user.id,
            email: user.email.clone(),
            is_support: user.is_support(),
            role,
            project_id,
        };
        access.require(action)?;
        Ok(access)
    }

    pub use crate::db::portal::PortalSession;

    /// The portal's own cookie (`SameSite=None; Secure; Partitioned`, so it works in
    /// the operator's cross-site frame), apart from the dashboard's `Lax` one.
    pub const PORTAL_COOKIE: &str = "posthorn_portal";

    /// What a request's cookies say about a portal session.
    #[derive(Debug, PartialEq, Eq)]
    pub enum PortalCookie {
        Absent,
        One(String),
        /// More than one: a cookie planted beside the browser's own (for a narrower
        /// path, or from a sibling domain) would come first, so none of them is trusted.
        Ambiguous,
    }

    /// The portal cookies among a request's cookies.
    pub fn portal_cookie(headers: &http::HeaderMap) -> PortalCookie {
        let mut found = headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .filter(|(n, _)| *n == PORTAL_COOKIE)
            .map(|(_, v)| v.to_string());
        match (found.next(), found.next()) {
            (None, _) => PortalCookie::Absent,
            (Some(token), None) => PortalCookie::One(token),
            (Some(_), Some(_)) => PortalCookie::Ambiguous,
        }
    }

    /// The `Set-Cookie` value that makes a browser forget its portal cookie.
    pub fn portal_cookie_cleared() -> String {
        format!("{PORTAL_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=None; Partitioned")
    }

    /// Who was signed in when a browser signed out.
    pub struct SignedOut {
        pub dashboard: bool,
        pub portal: bool,
    }

    /// Ends every session the browser holds: the dashboard's, and the portal's, whose
    /// row goes too (a copy of the cookie kept elsewhere is worth nothing after). The
    /// caller sends [`portal_cookie_cleared`] with its answer.
    pub async fn sign_out(
        pool: &PgPool,
        session: &Session,
        headers: &http::HeaderMap,
    ) -> AppResult<SignedOut> {
        let dashboard = session_user(pool, session).await?.is_some();
        // A flush that fails leaves the id unusable anyway; signing out goes on.
        if let Err(e) = session.flush().await {
            tracing::warn!(error = %e, "session flush at sign-out");
        }
        let portal = match portal_cookie(headers) {
            PortalCookie::One(token) => crate::db::portal::end_session(pool, &token).await?,
            PortalCookie::Absent | PortalCookie::Ambiguous => false,
        };
        Ok(SignedOut { dashboard, portal })
    }

    /// The portal session the request's cookie names, which the server's portal layer
    /// looked up before any page or server function ran. The layer puts none there for a
    /// browser that also holds a dashboard session: the dashboard session wins, so a
    /// portal link a hostile page opened cannot act for a signed-in user.
    pub async fn portal_session() -> Option<PortalSession> {
        leptos_axum::extract::<Option<axum::Extension<PortalSession>>>()
            .await
            .ok()
            .flatten()
            .map(|axum::Extension(p)| p)
    }

    /// Access for a portal user: their one project (any other is "not found"), in the
    /// role the operator gave them.
    pub fn portal_access(
        portal: &PortalSession,
        project_id: ProjectId,
        action: Action,
    ) -> AppResult<Access> {
        if project_id != portal.project_id {
            return Err(AppError::NotFound);
        }
        let access = Access {
            user_id: UserId::new(0),
            email: portal.actor(),
            is_support: false,
            role: match portal.role {
                crate::core::operator::PortalRole::Viewer => Role::Viewer,
                _ => Role::Portal,
            },
            project_id,
        };
        access.require(action)?;
        Ok(access)
    }

    /// The project itself acting (its API key, the command line, tests).
    pub fn system_access(project_id: ProjectId, actor: &str) -> Access {
        Access {
            user_id: UserId::new(0),
            email: actor.to_string(),
            is_support: false,
            role: Role::System,
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
        Ok(session_user(&ctx.pool, &session().await?).await?)
    }

    /// The session's user, unless the session predates the user's last password change.
    pub async fn session_user(pool: &PgPool, session: &Session) -> AppResult<Option<User>> {
        let Some(id) = session.get::<i64>(USER_KEY).await.ok().flatten() else {
            return Ok(None);
        };
        let epoch = session
            .get::<i32>(EPOCH_KEY)
            .await
            .ok()
            .flatten()
            .unwrap_or(0);
        Ok(users::get(pool, UserId::new(id))
            .await?
            .filter(|u| u.session_epoch == epoch))
    }

    /// Signs `user` into this session under a new session id (an id planted before
    /// sign-in is worthless after it).
    pub async fn sign_in(session: &Session, user: &User) -> Result<(), ServerFnError> {
        session.cycle_id().await.map_err(internal)?;
        session.insert(USER_KEY, user.id).await.map_err(internal)?;
        session
            .insert(EPOCH_KEY, user.session_epoch)
            .await
            .map_err(internal)?;
        Ok(())
    }

    /// The failures counted for one password check, to take back if it succeeds.
    pub struct Guess {
        window: i64,
        address: String,
        pair: String,
        account: String,
    }

    /// Counts a password check as a failure before it is made, then refuses it (429),
    /// delays it, or lets it through, by [`sign_in_gate`]. `account` names what is
    /// guessed at (an email, a user id), `scope` the form (sign-in, password change).
    pub async fn count_guess(pool: &PgPool, scope: &str, account: &str) -> AppResult<Guess> {
        let ip = leptos_axum::extract::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .await
            .map(|c| address_bucket(c.0.ip()))
            .unwrap_or_default();
        let now = chrono::Utc::now().timestamp();
        let window = now - now.rem_euclid(SIGN_IN_WINDOW_SECS);
        let guess = Guess {
            window,
            address: format!("{scope}-ip:{ip}"),
            pair: format!("{scope}-pair:{account}:{ip}"),
            account: format!("{scope}-account:{account}"),
        };
        let counts =
            rate_counters::hit_each(pool, &[&guess.address, &guess.pair, &guess.account], window)
                .await?;
        match sign_in_gate(counts[0], counts[1], counts[2]) {
            SignInGate::Refuse => {
                let wait = (window + SIGN_IN_WINDOW_SECS - now).max(1) / 60 + 1;
                Err(AppError::TooMany(format!(
                    "Too many wrong passwords from this address. Try again in {wait} minutes."
                )))
            }
            SignInGate::After(wait) => {
                tokio::time::sleep(wait).await;
                Ok(guess)
            }
            SignInGate::Go => Ok(guess),
        }
    }

    /// The password was right: the guess is not a failure after all.
    pub async fn guess_was_right(pool: &PgPool, guess: Guess) -> AppResult<()> {
        rate_counters::clear(pool, &guess.pair, guess.window).await?;
        rate_counters::hit_by(pool, &guess.address, guess.window, -1).await?;
        rate_counters::hit_by(pool, &guess.account, guess.window, -1).await?;
        Ok(())
    }

    pub async fn require_user() -> Result<User, ServerFnError> {
        current_user()
            .await?
            .ok_or_else(|| AppError::Unauthorized("Please sign in again.".into()).into())
    }

    /// Access to a project named explicitly (a row's project, a link).
    pub async fn access_to(project_id: ProjectId, action: Action) -> Result<Access, ServerFnError> {
        if let Some(portal) = portal_session().await {
            return Ok(portal_access(&portal, project_id, action)?);
        }
        let ctx = server_ctx()?;
        let user = require_user().await?;
        Ok(authorize(&ctx.pool, &user, project_id, action).await?)
    }

    /// The access a card's plain form needs on endpoint `id` of the session's project. A
    /// refusal answers with its own status (401, 403, 404 for another project's endpoint)
    /// rather than the redirect back to the page that carries a form's mistakes: the
    /// caller was never shown the form.
    pub async fn endpoint_access(id: EndpointId, action: Action) -> Result<Access, ServerFnError> {
        let ctx = server_ctx()?;
        let access = current_access(action).await?;
        crate::db::endpoints::get(&ctx.pool, &access, id).await?;
        Ok(access)
    }

    /// Access to the project selected in the session (or the user's first project).
    pub async fn current_access(action: Action) -> Result<Access, ServerFnError> {
        if let Some(portal) = portal_session().await {
            return Ok(portal_access(&portal, portal.project_id, action)?);
        }
        let ctx = server_ctx()?;
        let user = require_user().await?;
        let session = session().await?;
        if let Some(id) = session.get::<i64>(PROJECT_KEY).await.ok().flatten() {
            match authorize(&ctx.pool, &user, ProjectId::new(id), action).await {
                Ok(access) => return Ok(access),
                Err(AppError::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let first = projects::visible_to(&ctx.pool, user.id, user.is_support())
            .await?
            .into_iter()
            .next()
            .ok_or(AppError::NotFound)?;
        Ok(authorize(&ctx.pool, &user, first.id, action).await?)
    }
}

#[server(endpoint = "get_viewer")]
pub async fn get_viewer() -> Result<Option<Viewer>, ServerFnError> {
    use crate::{ctx::server_ctx, db::projects};
    let ctx = server_ctx()?;
    if let Some(portal) = portal_session().await {
        return portal_viewer(&ctx.pool, portal).await.map(Some);
    }
    let Some(user) = current_user().await? else {
        return Ok(None);
    };
    let projects = projects::visible_to(&ctx.pool, user.id, user.is_support()).await?;
    let (current, member) =
        match current_access(crate::core::permissions::Action::ReadDeliveries).await {
            Ok(access) => (
                projects.iter().find(|p| p.id == access.project_id).cloned(),
                access.role == crate::core::permissions::Role::Member,
            ),
            Err(_) => (None, false),
        };
    let is_support = user.is_support();
    let disabled_endpoints: Vec<(i64, String, String)> = match &current {
        Some(p) => crate::db::endpoint_activity::auto_disabled(&ctx.pool, p.id).await?,
        None => Vec::new(),
    };
    Ok(Some(Viewer {
        user_id: user.id,
        email: user.email,
        is_support,
        member,
        projects,
        current,
        disabled_endpoints,
        portal: None,
    }))
}

/// What a portal page shows: the one project, its brand, and the portal user.
#[cfg(feature = "ssr")]
async fn portal_viewer(
    pool: &sqlx::PgPool,
    portal: PortalSession,
) -> Result<Viewer, ServerFnError> {
    use crate::{db::projects, model::PortalView};
    let project = projects::get(pool, portal.project_id)
        .await?
        .ok_or_else(crate::ctx::not_found)?;
    let disabled_endpoints =
        crate::db::endpoint_activity::auto_disabled(pool, portal.project_id).await?;
    let user = portal
        .user
        .name
        .clone()
        .or_else(|| portal.user.email.clone())
        .unwrap_or_else(|| portal.user.id.clone());
    Ok(Viewer {
        user_id: crate::core::UserId::new(0),
        email: portal.user.email.clone().unwrap_or_default(),
        is_support: false,
        member: false,
        projects: vec![project.clone()],
        current: Some(project),
        disabled_endpoints,
        portal: Some(PortalView {
            brand: portal.brand,
            role: portal.role.as_str().to_string(),
            user,
        }),
    })
}

/// Signs in and goes to `next` when it is a path of this site (`/login?next=…`), else
/// to the cabinet's home. A refused sign-in answers `401`.
#[server(endpoint = "login")]
pub async fn login(
    email: String,
    password: String,
    #[server(default)] next: Option<String>,
) -> Result<(), ServerFnError> {
    use crate::{ctx::server_ctx, db::users, error::AppError};
    let ctx = server_ctx()?;
    let email = email.trim().to_lowercase();
    let wrong =
        || -> ServerFnError { AppError::Unauthorized("Wrong email or password.".into()).into() };
    if email.len() > 320 || password.len() > 1024 {
        return Err(wrong());
    }
    let guess = count_guess(&ctx.pool, "login", &email).await?;
    let user = users::find_by_email(&ctx.pool, &email).await?;
    // An unknown email costs the same hash check as a known one.
    let hash = user
        .as_ref()
        .map_or(users::dummy_hash(), |u| u.password_hash.as_str());
    let ok = users::check_password(&password, hash).await?;
    let Some(user) = user.filter(|_| ok) else {
        return Err(wrong());
    };
    guess_was_right(&ctx.pool, guess).await?;
    sign_in(&session().await?, &user).await?;
    leptos_axum::redirect(crate::core::next_path::landing(next.as_deref()));
    Ok(())
}

/// Signs out of the dashboard and of any portal session the browser also holds (as
/// `POST /logout` does).
#[server(endpoint = "logout")]
pub async fn logout() -> Result<(), ServerFnError> {
    let ctx = crate::ctx::server_ctx()?;
    let headers: http::HeaderMap = leptos_axum::extract().await.unwrap_or_default();
    sign_out(&ctx.pool, &session().await?, &headers).await?;
    if let Some(res) = use_context::<leptos_axum::ResponseOptions>() {
        if let Ok(clear) = http::HeaderValue::from_str(&portal_cookie_cleared()) {
            res.append_header(http::header::SET_COOKIE, clear);
        }
    }
    leptos_axum::redirect("/login");
    Ok(())
}

#[server(endpoint = "switch_project")]
pub async fn switch_project(project_id: crate::core::ProjectId) -> Result<(), ServerFnError> {
    let access = access_to(project_id, crate::core::permissions::Action::ReadDeliveries).await?;
    session()
        .await?
        .insert(PROJECT_KEY, access.project_id)
        .await
        .map_err(internal)?;
    Ok(())
}
