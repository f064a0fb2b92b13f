//! `/developers/events/schema/{type}?project=…`: an event type's JSON Schema as a file,
//! for a signed-in user who may read the project's catalogue (404 otherwise, as for a
//! project that does not exist).

use app::core::ProjectId;
use app::{core::permissions::Action, db::schemas};
use axum::{
    extract::{Path, Query, State},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
};
use sqlx::PgPool;
use tower_sessions::Session;

#[derive(serde::Deserialize)]
pub struct Which {
    project: ProjectId,
}

pub async fn download(
    State(pool): State<PgPool>,
    session: Session,
    Path(event_type): Path<String>,
    Query(which): Query<Which>,
) -> Response {
    let not_found = || (StatusCode::NOT_FOUND, "not found").into_response();
    let Ok(Some(user)) = app::auth::session_user(&pool, &session).await else {
        return not_found();
    };
    if app::auth::authorize(&pool, &user, which.project, Action::ReadCatalogue)
        .await
        .is_err()
    {
        return not_found();
    }
    match schemas::get(&pool, which.project, &event_type).await {
        Ok(Some(s)) => {
            let name: String = s
                .event_type
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '_')
                .collect();
            (
                [
                    (header::CONTENT_TYPE, "application/schema+json".to_string()),
                    (
                        header::CONTENT_DISPOSITION,
                        format!("attachment; filename=\"{name}.schema.json\""),
                    ),
                ],
                s.schema,
            )
                .into_response()
        }
        _ => not_found(),
    }
}
