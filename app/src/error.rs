//! The one error type of the domain and data layers; the API and the server functions
//! each map it to their wire form in one place.

use std::fmt;

#[derive(Debug)]
pub enum AppError {
    /// Unknown, or not the caller's: the two are never told apart.
    NotFound,
    Conflict(String),
    Invalid(String),
    Unauthorized(String),
    /// Signed in and allowed to see the project, but the role may not do this.
    Forbidden(String),
    TooMany(String),
    /// One of the project's limits (SPEC "Limits") would be passed; the message names it.
    LimitReached(String),
    /// A shared resource (the schema checks' slots) stayed taken: retry shortly (503).
    Busy(String),
    /// A fault of the server's own, not the database's (500); the text is safe to show.
    Internal(&'static str),
    #[cfg(feature = "ssr")]
    Db(sqlx::Error),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::NotFound => f.write_str("not found"),
            AppError::Conflict(m)
            | AppError::Invalid(m)
            | AppError::Unauthorized(m)
            | AppError::Forbidden(m)
            | AppError::TooMany(m)
            | AppError::LimitReached(m)
            | AppError::Busy(m) => f.write_str(m),
            AppError::Internal(m) => f.write_str(m),
            #[cfg(feature = "ssr")]
            AppError::Db(_) => f.write_str("internal error"),
        }
    }
}

impl AppError {
    /// The HTTP status a server function answers with for this error.
    pub fn status(&self) -> u16 {
        match self {
            AppError::NotFound => 404,
            AppError::Conflict(_) => 409,
            AppError::Invalid(_) | AppError::LimitReached(_) => 422,
            AppError::Unauthorized(_) => 401,
            AppError::Forbidden(_) => 403,
            AppError::TooMany(_) => 429,
            AppError::Busy(_) => 503,
            AppError::Internal(_) => 500,
            #[cfg(feature = "ssr")]
            AppError::Db(_) => 500,
        }
    }
}

/// Server functions answer with the error's own status (404 for another project's id,
/// 409 for a refused retry…) instead of a blanket 500; the message is the same.
impl From<AppError> for leptos::prelude::ServerFnError {
    fn from(e: AppError) -> Self {
        #[cfg(feature = "ssr")]
        {
            if let AppError::Db(db) = &e {
                tracing::error!(error = %db, "database error in a server function");
            }
            if let Some(res) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
                if let Ok(status) = http::StatusCode::from_u16(e.status()) {
                    res.set_status(status);
                }
            }
        }
        leptos::prelude::ServerFnError::ServerError(e.to_string())
    }
}

/// `AppError` is no `std::error::Error` (that would clash with the conversion above), so
/// the command line's boxed errors take it through this instead.
impl From<AppError> for Box<dyn std::error::Error + Send + Sync> {
    fn from(e: AppError) -> Self {
        e.to_string().into()
    }
}

#[cfg(feature = "ssr")]
impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::RowNotFound => AppError::NotFound,
            // Class 22 is "data exception": a value the caller sent that PostgreSQL
            // cannot store (a NUL character, `\u0000` in JSON, a number out of range).
            // PostgreSQL's own words describe its internals: logged, never sent.
            sqlx::Error::Database(d) if d.code().is_some_and(|c| c.starts_with("22")) => {
                tracing::warn!(error = %d, "PostgreSQL refused a value a client sent");
                AppError::Invalid(
                    "value not accepted: a text with a NUL character, or a number out of range"
                        .into(),
                )
            }
            e => AppError::Db(e),
        }
    }
}

pub type AppResult<T> = Result<T, AppError>;
