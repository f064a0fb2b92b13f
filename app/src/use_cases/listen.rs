//! Listen sessions (`posthorn listen`): open one (or reattach to a named one), end one,
//! and end those whose CLI has been away too long. A session is an endpoint of the
//! project, counted against its `endpoints` limit, created and ended with the same
//! checks and audit entries as any other.

use crate::core::EndpointId;
use sqlx::PgPool;

use crate::{
    auth::Access,
    core::{limits::Limit, permissions::Action},
    db::{audit, endpoints, limits, listen},
    error::{AppError, AppResult},
    model::EndpointView,
};

/// Listen sessions one project may hold at once (SPEC "Listen"), whatever its endpoint
/// limit: each holds a connection and a claim loop on a server.
pub const MAX_SESSIONS: i64 = 5;

/// Names, as `--name` gives them: short and printable, so they read in a log line.
const MAX_NAME: usize = 64;

/// What the CLI asks for.
pub struct OpenListen {
    /// Reattach to the project's live session of this name, or start one so named.
    pub name: Option<String>,
    /// The local URL the CLI forwards to, shown as the endpoint's URL.
    pub forward: String,
    pub event_types: Vec<String>,
    pub filter: Option<String>,
}

pub struct Opened {
    pub endpoint: EndpointView,
    /// The signing secret (`whsec_…`), the same on reattaching.
    pub secret: String,
    pub reattached: bool,
}

/// A `--name`: 1 to 64 of letters, digits, `.`, `_` and `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "name must be 1 to {MAX_NAME} letters, digits, '.', '_' or '-'"
        ))
    }
}

/// Opens a session, or reattaches to the named one (its events and filter replaced by
/// the ones asked for now, its secret and waiting attempts kept).
pub async fn open(pool: &PgPool, access: &Access, req: OpenListen) -> AppResult<Opened> {
    access.require(Action::CreateEndpoint)?;
    if let Some(name) = &req.name {
        check_name(name).map_err(AppError::Invalid)?;
    }
    if let Some(f) = &req.filter {
        crate::core::filter::compile(f).map_err(AppError::Invalid)?;
    }
    match open_once(pool, access, &req).await {
        // Two CLIs opened the same new name at once: the other one made it, so this
        // one reattaches to it.
        Err(AppError::Db(e)) if is_unique_violation(&e) && req.name.is_some() => {
            open_once(pool, access, &req).await
        }
        done => done,
    }
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.code().as_deref() == Some("23505"))
}

async fn open_once(pool: &PgPool, access: &Access, req: &OpenListen) -> AppResult<Opened> {
    let mut tx = pool.begin().await?;
    let existing = match &req.name {
        Some(name) => listen::named(&mut tx, access, name).await?,
        None => None,
    };
    let (id, reattached) = match existing {
        Some(id) => {
            let limits = limits::admit(&mut tx, access.project_id, Limit::Endpoints, 0).await?;
            limits::admit_event_types(&limits, &req.event_types)?;
            let patch = endpoints::EndpointPatch {
                url: Some(req.forward.clone()),
                event_types: Some(req.event_types.clone()),
                description: None,
                enabled: None,
                rate_limit: None,
            };
            endpoints::update(&mut *tx, access, id, patch).await?;
            (id, true)
        }
        None => {
            let limits = limits::admit(&mut tx, access.project_id, Limit::Endpoints, 1).await?;
            limits::admit_event_types(&limits, &req.event_types)?;
            if listen::count(&mut tx, access).await? >= MAX_SESSIONS {
                return Err(AppError::LimitReached(format!(
                    "a project holds at most {MAX_SESSIONS} listen sessions at once; \
                     stop one (or wait 10 minutes for an abandoned one to end)"
                )));
            }
            let (ep, _) = endpoints::create(
                &mut tx,
                access,
                endpoints::NewEndpoint {
                    url: &req.forward,
                    event_types: &req.event_types,
                    description: "posthorn listen",
                    rate_limit: None,
                },
            )
            .await?;
            listen::mark(&mut tx, access, ep.id, req.name.as_deref()).await?;
            (ep.id, false)
        }
    };
    endpoints::set_filter(&mut *tx, access, id, req.filter.as_deref()).await?;
    audit::record(
        &mut *tx,
        access,
        if reattached {
            "endpoint.listen_reattach"
        } else {
            "endpoint.create"
        },
        &format!("endpoint #{id}"),
        serde_json::json!({ "destination": "listen", "name": req.name }),
    )
    .await?;
    tx.commit().await?;
    let endpoint = endpoints::get(pool, access, id).await?;
    let (secret, _) = endpoints::secrets(pool, access, id).await?;
    Ok(Opened {
        endpoint,
        secret,
        reattached,
    })
}

/// Ends a session (its CLI exited): the endpoint is deleted, its waiting attempts
/// become dead letters like any deleted endpoint's.
pub async fn close(pool: &PgPool, access: &Access, id: EndpointId) -> AppResult<()> {
    if !listen::is_session(pool, access, id).await? {
        return Err(AppError::NotFound);
    }
    super::endpoints::delete(pool, access, id).await
}

/// Ends the sessions whose CLI has been away for 10 minutes, or away with more than
/// [`listen::AWAY_BUFFER`] attempts waiting; returns how many.
pub async fn end_idle(pool: &PgPool) -> AppResult<usize> {
    let idle = listen::idle(pool, chrono::Utc::now()).await?;
    for (project_id, id) in &idle {
        let access = crate::auth::system_access(*project_id, "listen");
        match super::endpoints::delete(pool, &access, *id).await {
            Ok(()) | Err(AppError::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(idle.len())
}
