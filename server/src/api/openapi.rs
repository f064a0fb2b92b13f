//! The OpenAPI document, generated from the handlers' annotations so it cannot drift.

use axum::Json;
use utoipa::{
    openapi::{
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
        ContentBuilder, Ref, ResponseBuilder,
    },
    Modify, OpenApi,
};

/// The errors every operation of a document can answer with, listed once here rather
/// than on each handler: 401 (no or bad key), 422 (a value refused), 429, and 400 (not
/// JSON) and 413 for operations that take a body. The operator API's document shares it.
pub struct CommonErrors {
    /// What a 401 means, naming the kind of key.
    pub unauthorized: &'static str,
    /// What a 429 means there.
    pub too_many: &'static str,
}

impl Modify for CommonErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ApiErrorBody")))
                        .build(),
                )
                .build()
        };
        for item in openapi.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                let with_body = op.request_body.is_some();
                let responses = &mut op.responses.responses;
                let mut add = |status: &str, description: &str| {
                    responses
                        .entry(status.to_string())
                        .or_insert_with(|| error(description).into());
                };
                add("401", self.unauthorized);
                add("422", "A value was refused; the message says which");
                add("429", self.too_many);
                if with_body {
                    add("400", "The body is not JSON (or is empty)");
                    add("413", "Request body over 256 KiB");
                }
            }
        }
    }
}

/// Declares a bearer key, under the name the document's `security` uses.
pub struct BearerKey(pub &'static str);

impl Modify for BearerKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            self.0,
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

const KEY: BearerKey = BearerKey("api_key");
const ERRORS: CommonErrors = CommonErrors {
    unauthorized: "Missing, unknown or revoked API key",
    too_many: "Rate limit spent; see Retry-After",
};

#[derive(OpenApi)]
#[openapi(
    info(title = "Posthorn public API", version = "1"),
    servers((url = "/public/v1")),
    paths(
        super::webhooks::create, super::webhooks::list, super::webhooks::get, super::webhooks::update,
        super::webhooks::delete, super::webhooks::rotate,
        super::events::create, super::events::create_batch, super::events::get, super::events::list,
        super::events::erase, super::erasures::create, super::erasures::get,
        super::deliveries::list, super::deliveries::get, super::deliveries::retry,
        super::replays::recover, super::replays::get, super::replays::cancel,
        super::schemas::put, super::schemas::get, super::schemas::delete,
        super::listen::open,
    ),
    components(schemas(super::error::ApiErrorBody, super::error::ApiErrorDetail)),
    modifiers(&KEY, &ERRORS, &URL_OR_DESTINATION),
    security(("api_key" = []))
)]
pub struct ApiDoc;

const URL_OR_DESTINATION: super::destination_schema::UrlOrDestination =
    super::destination_schema::UrlOrDestination;

pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
