//! The API document's `destination`: one schema per type, each field with the grammar
//! `app::core::destination_grammar` checks, so that a request the document allows is
//! one the server takes, and one it refuses is refused. Also the rule that a new endpoint
//! has `url` or `destination` (one of them) and a change at most one.

use app::core::{destination as d, destination_grammar as g, endpoint_url};
use utoipa::{
    openapi::{
        schema::{
            AdditionalProperties, AllOfBuilder, AnyOfBuilder, ObjectBuilder, OneOfBuilder, Schema,
            SchemaType, Type,
        },
        OpenApi, RefOr,
    },
    Modify,
};

fn string(pattern: &str, max: usize, nullable: bool) -> ObjectBuilder {
    let types: &[Type] = if nullable {
        &[Type::String, Type::Null]
    } else {
        &[Type::String]
    };
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter(types.iter().cloned()))
        .pattern(Some(pattern))
        .max_length(Some(max))
}

fn integer(min: u64, max: u64) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
        .minimum(Some(min as f64))
        .maximum(Some(max as f64))
}

/// One type's object: `type` fixed, the fields given, nothing else.
fn kind(name: &str, fields: Vec<(&str, ObjectBuilder, bool)>) -> Schema {
    let mut o = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "type",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some([name])),
        )
        .required("type")
        .additional_properties(Some(AdditionalProperties::FreeForm(false)));
    for (field, schema, required) in fields {
        o = o.property(field, schema);
        if required {
            o = o.required(field);
        }
    }
    o.into()
}

/// `destination` in a create or change request: null, or one of the types.
pub fn destination_in() -> RefOr<Schema> {
    let credential = || string(g::CREDENTIAL, d::MAX_CREDENTIAL, true);
    let one_of = OneOfBuilder::new()
        .description(Some(
            "Instead of `url`, a broker to publish to (SPEC \"Destinations\"): `redis`, `nats`, \
             `mqtt` or `rabbitmq`, or `http` with its `url`. Credentials (in the URL's user \
             info or the named fields) are write-only and sealed at rest.",
        ))
        .item(kind(
            "http",
            vec![(
                "url",
                string(endpoint_url::PATTERN, endpoint_url::MAX_LEN, false),
                true,
            )],
        ))
        .item(kind(
            "redis",
            vec![
                ("url", string(g::REDIS_URL, d::MAX_URL, false), true),
                ("stream", string(g::STREAM, d::MAX_NAME, false), true),
                ("maxlen", integer(1, d::MAX_MAXLEN), false),
            ],
        ))
        .item(kind(
            "nats",
            vec![
                ("url", string(g::NATS_URL, d::MAX_URL, false), true),
                ("subject", string(g::SUBJECT, d::MAX_NAME, false), true),
                ("user", credential(), false),
                ("password", credential(), false),
                ("token", credential(), false),
            ],
        ))
        .item(kind(
            "mqtt",
            vec![
                ("url", string(g::MQTT_URL, d::MAX_URL, false), true),
                ("topic", string(g::TOPIC, d::MAX_NAME, false), true),
                ("qos", integer(0, 1), false),
                ("username", credential(), false),
                ("password", credential(), false),
            ],
        ))
        .item(kind(
            "rabbitmq",
            vec![
                ("url", string(g::AMQP_URL, d::MAX_URL, false), true),
                ("exchange", string(g::AMQP_NAME, 255, true), false),
                ("routing_key", string(g::AMQP_NAME, 255, true), false),
            ],
        ))
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .build();
    RefOr::T(Schema::OneOf(one_of))
}

/// A schema that holds when `field`, if present, is of `json_type` (`properties` alone,
/// so an absent field passes).
fn typed(field: &str, json_type: Type, required: bool) -> ObjectBuilder {
    let o = ObjectBuilder::new().property(field, ObjectBuilder::new().schema_type(json_type));
    if required {
        o.required(field)
    } else {
        o
    }
}

/// CreateWebhook: `url` or `destination`, exactly one of them given (not null).
/// UpdateWebhook: at most one of them.
pub struct UrlOrDestination;

impl Modify for UrlOrDestination {
    fn modify(&self, openapi: &mut OpenApi) {
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        let wrap = |schema: RefOr<Schema>, rule: Schema| {
            RefOr::T(Schema::AllOf(
                AllOfBuilder::new().item(schema).item(rule).build(),
            ))
        };
        if let Some(create) = components.schemas.remove("CreateWebhook") {
            let rule = OneOfBuilder::new()
                .item(typed("url", Type::String, true))
                .item(typed("destination", Type::Object, true))
                .build();
            let create = wrap(create, Schema::OneOf(rule));
            components.schemas.insert("CreateWebhook".into(), create);
        }
        if let Some(update) = components.schemas.remove("UpdateWebhook") {
            let rule = AnyOfBuilder::new()
                .item(typed("url", Type::Null, false))
                .item(typed("destination", Type::Null, false))
                .build();
            let update = wrap(update, Schema::AnyOf(rule));
            components.schemas.insert("UpdateWebhook".into(), update);
        }
    }
}
