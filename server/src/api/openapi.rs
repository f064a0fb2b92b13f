//! The OpenAPI document, generated from the handlers' annotations so it cannot drift.

use axum::Json;
use utoipa::{
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi,
};

struct BearerKey;

impl Modify for BearerKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Posthorn public API", version = "1"),
    servers((url = "/public/v1")),
    paths(
        super::webhooks::create, super::webhooks::list, super::webhooks::get, super::webhooks::update,
        super::webhooks::delete, super::webhooks::rotate,
        super::events::create, super::events::get, super::events::list,
        super::deliveries::list, super::deliveries::get, super::deliveries::retry,
    ),
    modifiers(&BearerKey),
    security(("api_key" = []))
)]
pub struct ApiDoc;

pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
