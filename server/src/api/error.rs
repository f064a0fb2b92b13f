//! The API's one error type and its JSON, `{"error":{"code","message"}}`, mapped from the
//! domain's errors in one place.

use app::error::AppError;
use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ApiErrorBody {
            error: ApiErrorDetail {
                code: self.code,
                message: self.message,
            },
        };
        (self.status, Json(body)).into_response()
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> ApiError {
        match e {
            AppError::NotFound => ApiError::new(StatusCode::NOT_FOUND, "not_found", "not found"),
            AppError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
            AppError::Invalid(m) => ApiError::invalid(m),
            AppError::LimitReached(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "limit_reached", m)
            }
            AppError::Unauthorized(m) => ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m),
            AppError::Forbidden(m) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", m),
            AppError::TooMany(m) => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", m),
            AppError::Busy(m) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", m),
            AppError::Internal(m) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", m)
            }
            AppError::Db(e) => {
                tracing::error!(error = %e, "database error in the API");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error",
                )
            }
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> ApiError {
        AppError::from(e).into()
    }
}

/// Every error of the API: `{"error": {"code", "message"}}`.
#[derive(Serialize, ToSchema)]
pub struct ApiErrorBody {
    error: ApiErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ApiErrorDetail {
    /// `unauthorized`, `rate_limited`, `invalid`, `limit_reached`, `too_large`, `not_found`,
    /// `conflict`…
    #[schema(value_type = String)]
    code: &'static str,
    message: String,
}
