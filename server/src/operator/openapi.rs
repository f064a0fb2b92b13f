//! The operator API's OpenAPI document, generated from the handlers' annotations.

use axum::Json;
use utoipa::OpenApi;

use crate::api::openapi::{BearerKey, CommonErrors};

const KEY: BearerKey = BearerKey("operator_key");
const ERRORS: CommonErrors = CommonErrors {
    unauthorized: "Missing, unknown or revoked operator key",
    too_many: "Too many requests without a valid key; see Retry-After",
};

#[derive(OpenApi)]
#[openapi(
    info(title = "Posthorn operator API", version = "1"),
    servers((url = "/operator/v1")),
    paths(
        super::projects::create, super::projects::list, super::projects::get,
        super::projects::update, super::projects::delete,
        super::access::create_key, super::access::revoke_key, super::access::usage,
        super::access::portal_link,
    ),
    components(schemas(crate::api::error::ApiErrorBody, crate::api::error::ApiErrorDetail)),
    modifiers(&KEY, &ERRORS),
    security(("operator_key" = []))
)]
pub struct OperatorDoc;

pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(OperatorDoc::openapi())
}
