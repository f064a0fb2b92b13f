//! An event type's JSON Schema (draft 2020-12), checked when it is set and compiled once
//! per version, by the `jsonschema` crate: `$ref` only within the schema (a remote one
//! would have the server fetch URLs past the target guard: nothing is ever fetched),
//! regular expressions by the `regex` crate (linear time, no backtracking), `format`s
//! asserted. `data` that fails it is refused at ingest naming the path and the rule.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// The largest schema, in bytes of JSON.
pub const MAX_BYTES: usize = 64 * 1024;
/// Schemas a project may have.
pub const MAX_PER_PROJECT: i64 = 200;

/// A compiled schema.
pub struct Schema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schema")
    }
}

/// Refuses every retrieval: the only references that resolve are within the schema.
struct NoRemote;

impl jsonschema::Retrieve for NoRemote {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{uri}: only references within the schema (#…) are followed").into())
    }
}

/// Checks and compiles a schema as sent (JSON text); the error says what is wrong.
pub fn compile(text: &str) -> Result<Schema, String> {
    if text.len() > MAX_BYTES {
        return Err(format!(
            "schema: {} bytes, more than the {MAX_BYTES} allowed",
            text.len()
        ));
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("schema: not JSON ({e})"))?;
    compile_value(&value)
}

fn compile_value(value: &serde_json::Value) -> Result<Schema, String> {
    if !value.is_object() && !value.is_boolean() {
        return Err("schema: must be a JSON object (or true/false)".into());
    }
    if let Some(s) = value.get("$schema").and_then(|s| s.as_str()) {
        if s != DRAFT {
            return Err(format!(
                "schema: $schema must be {DRAFT} (draft 2020-12), not {s}"
            ));
        }
    }
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .with_retriever(NoRemote)
        .build(value)
        .map_err(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                format!("schema: {e}")
            } else {
                format!("schema at {at}: {e}")
            }
        })?;
    Ok(Schema { validator })
}

pub const DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";

impl Schema {
    /// None when `data` is valid; else the first failure: where in the event (`data.…`),
    /// which rule, and why.
    pub fn check(&self, data: &serde_json::Value) -> Option<String> {
        let e = self.validator.iter_errors(data).next()?;
        let mut at = String::from("data");
        for part in e.instance_path().to_string().split('/').skip(1) {
            let part = part.replace("~1", "/").replace("~0", "~");
            if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                at.push_str(&format!("[{part}]"));
            } else {
                at.push('.');
                at.push_str(&part);
            }
        }
        let message: String = e.to_string().chars().take(300).collect();
        Some(format!(
            "{at}: {message} (rule `{}` at {})",
            e.kind().keyword(),
            e.schema_path()
        ))
    }
}

/// Compiled schemas this process keeps, by project and type, each for the version of
/// the project's configuration it was read at (bumped when a schema changes): a lone
/// event of a type with a schema costs one read per version, not one per event.
/// Bounded: past [`KEPT`] entries the cache starts again empty.
#[derive(Default)]
pub struct SchemaCache {
    kept: Mutex<HashMap<(i64, String), Kept>>,
}

/// A type's schema (or none) as read at one version.
type Kept = (i64, Option<Arc<Schema>>);

pub const KEPT: usize = 4_096;

impl SchemaCache {
    /// `Some(schema or none)` when known for this version.
    pub fn get(
        &self,
        project_id: i64,
        version: i64,
        event_type: &str,
    ) -> Option<Option<Arc<Schema>>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        match kept.get(&(project_id, event_type.to_string())) {
            Some((v, s)) if *v == version => Some(s.clone()),
            _ => None,
        }
    }

    pub fn put(
        &self,
        project_id: i64,
        version: i64,
        event_type: &str,
        schema: Option<Arc<Schema>>,
    ) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert((project_id, event_type.to_string()), (version, schema));
    }
}

/// A stored schema (valid when stored) compiled again; one that no longer compiles is
/// treated as absent rather than refusing every event.
pub fn stored(text: &str) -> Option<Arc<Schema>> {
    compile(text).ok().map(Arc::new)
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
