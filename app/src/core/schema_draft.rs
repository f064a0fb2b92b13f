//! A first schema for an event type, drawn from one of its events: every field the
//! example has, typed as it is there, and required. A starting point the owner edits
//! (loosens a `required`, adds a `minimum`), not an inference of what the type allows.
//! Runs in the browser, on the example the catalogue already shows.

use serde_json::{json, Map, Value};

/// Nesting followed at most; deeper values are left as `{}` (anything).
const MAX_DEPTH: usize = 16;

/// A draft 2020-12 schema that `example` passes.
pub fn from_example(example: &Value) -> Value {
    let mut schema = Map::new();
    schema.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    if let Value::Object(shaped) = shape(example, 0) {
        schema.extend(shaped);
    }
    Value::Object(schema)
}

fn shape(v: &Value, depth: usize) -> Value {
    if depth >= MAX_DEPTH {
        return json!({});
    }
    match v {
        Value::Null => json!({"type": "null"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
        Value::String(_) => json!({"type": "string"}),
        // The first item stands for all: an example rarely shows every shape a list holds.
        Value::Array(items) => match items.first() {
            Some(first) => json!({"type": "array", "items": shape(first, depth + 1)}),
            None => json!({"type": "array"}),
        },
        Value::Object(fields) => {
            let properties: Map<String, Value> = fields
                .iter()
                .map(|(k, v)| (k.clone(), shape(v, depth + 1)))
                .collect();
            let required: Vec<Value> = fields.keys().map(|k| json!(k)).collect();
            json!({"type": "object", "properties": properties, "required": required})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_typed_and_required() {
        let s = from_example(&json!({"amount": 5, "rate": 0.5, "note": "x", "ok": true,
            "tags": ["a"], "none": null, "card": {"last4": "4242"}, "empty": []}));
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["amount"], json!({"type": "integer"}));
        assert_eq!(s["properties"]["rate"], json!({"type": "number"}));
        assert_eq!(s["properties"]["ok"], json!({"type": "boolean"}));
        assert_eq!(s["properties"]["none"], json!({"type": "null"}));
        assert_eq!(
            s["properties"]["tags"],
            json!({"type": "array", "items": {"type": "string"}})
        );
        assert_eq!(s["properties"]["empty"], json!({"type": "array"}));
        assert_eq!(s["properties"]["card"]["required"], json!(["last4"]));
        assert_eq!(s["required"].as_array().unwrap().len(), 8);
    }

    #[test]
    fn deep_nesting_is_cut_off() {
        let mut v = json!(1);
        for _ in 0..100 {
            v = json!([v]);
        }
        let s = from_example(&v);
        let mut depth = 0;
        let mut at = &s;
        while let Some(items) = at.get("items") {
            at = items;
            depth += 1;
        }
        assert_eq!(depth, MAX_DEPTH);
        assert_eq!(at, &json!({}));
    }

    #[test]
    fn a_scalar_example_gets_a_scalar_schema() {
        assert_eq!(from_example(&json!("x"))["type"], "string");
    }
}
