//! The operator's `limits` object (SPEC "Limits"), read, written and documented from the
//! one table of overrides ([`overrides`]): a new limit is accepted and documented without
//! a line here.

use std::{collections::BTreeMap, fmt, sync::LazyLock};

use app::core::operator::{limit_names, overrides};
use serde::{de, Deserialize, Deserializer, Serialize};
use utoipa::openapi::{
    schema::{AdditionalProperties, KnownFormat, SchemaFormat, SchemaType, Type},
    ObjectBuilder, RefOr, Schema,
};

use crate::api::webhooks::whole_number;

/// The operator's overrides, by limit name: whole numbers (`5.0` included), null for
/// none; their ranges are checked with the rest of the project's fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct LimitOverrides(BTreeMap<&'static str, i64>);

impl LimitOverrides {
    /// The override set for `name`, if any.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.get(name).copied()
    }
}

/// Every name, for serde's "expected one of" (which wants them for the program's life).
static NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(|| limit_names().collect());

impl<'de> Deserialize<'de> for LimitOverrides {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(OverridesVisitor)
    }
}

struct OverridesVisitor;

impl<'de> de::Visitor<'de> for OverridesVisitor {
    type Value = LimitOverrides;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct LimitOverrides")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<LimitOverrides, A::Error> {
        let mut set = BTreeMap::new();
        let mut seen = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let Some(name) = NAMES.iter().copied().find(|n| *n == key) else {
                return Err(de::Error::unknown_field(&key, &NAMES[..]));
            };
            if seen.contains(&name) {
                return Err(de::Error::duplicate_field(name));
            }
            seen.push(name);
            if let Some(n) = map.next_value::<Option<serde_json::Number>>()? {
                set.insert(name, whole_number(&n)?);
            }
        }
        Ok(LimitOverrides(set))
    }
}

impl utoipa::PartialSchema for LimitOverrides {
    fn schema() -> RefOr<Schema> {
        let mut object = ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .description(Some(
                "The operator's overrides, by limit name (SPEC \"Limits\"); each from 1 to its \
                 ceiling.",
            ));
        for (name, ceiling, about) in overrides() {
            object = object.property(
                name,
                ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(1))
                    .maximum(Some(ceiling))
                    .description(Some(about)),
            );
        }
        object.into()
    }
}

impl utoipa::ToSchema for LimitOverrides {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: serde_json::Value) -> Result<LimitOverrides, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn every_override_of_the_table_is_read_and_written_back_by_its_name() {
        let all: serde_json::Map<_, _> = overrides()
            .map(|(name, ceiling, _)| (name.to_string(), json!(ceiling)))
            .collect();
        assert_eq!(all.len(), 9);
        let read_back = read(json!(all)).unwrap();
        assert_eq!(serde_json::to_value(&read_back).unwrap(), json!(all));
        assert_eq!(read_back.get("retention_days"), Some(3650));
    }

    #[test]
    fn whole_numbers_only_known_names_only_and_null_is_no_override() {
        let r = read(json!({"endpoints": 5.0, "api_keys": null})).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), json!({"endpoints": 5}));
        assert!(read(json!({"endpoints": 5.5}))
            .unwrap_err()
            .contains("whole number"));
        let unknown = read(json!({"nope": 1})).unwrap_err();
        assert!(unknown.contains("unknown field `nope`"), "{unknown}");
        assert!(unknown.contains("`concurrent_erasures`"), "{unknown}");
        assert!(read(json!([5])).is_err());
        assert!(read(json!(5))
            .unwrap_err()
            .contains("struct LimitOverrides"));
    }

    #[test]
    fn the_schema_lists_every_override_with_its_ceiling() {
        let schema =
            serde_json::to_value(<LimitOverrides as utoipa::PartialSchema>::schema()).unwrap();
        assert_eq!(schema["type"], json!("object"));
        assert_eq!(schema["additionalProperties"], json!(false));
        for (name, ceiling, _) in overrides() {
            assert_eq!(
                schema["properties"][name]["maximum"],
                json!(ceiling),
                "{name}"
            );
            assert_eq!(schema["properties"][name]["minimum"], json!(1), "{name}");
        }
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(properties.len(), overrides().count());
    }
}
