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
/// The most terms a schema may come to with its references expanded: references shared
/// by many places (each level referring twice to the next) would otherwise make a small
/// schema cost exponential time on every event.
pub const MAX_EXPANDED: u64 = 20_000;
/// The longest chain of references followed (each one a level of recursion).
pub const MAX_REF_DEPTH: usize = 32;
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
    if !value.is_object() {
        return Err("schema: must be a JSON object".into());
    }
    expanded(value)?;
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

/// Refuses a schema that, with its local references expanded, comes to more than
/// [`MAX_EXPANDED`] terms or chains more than [`MAX_REF_DEPTH`] references. A reference
/// back into a schema being expanded (recursion, bounded by the data) counts once.
fn expanded(root: &serde_json::Value) -> Result<u64, String> {
    struct Walk<'a> {
        root: &'a serde_json::Value,
        sizes: HashMap<&'a str, u64>,
        open: Vec<&'a str>,
    }
    impl<'a> Walk<'a> {
        fn size(&mut self, v: &'a serde_json::Value) -> Result<u64, String> {
            use serde_json::Value as J;
            let mut n: u64 = 1;
            match v {
                J::Object(o) => {
                    for (k, child) in o {
                        n = n.saturating_add(self.size(child)?);
                        if let (true, Some(r)) = (k == "$ref" || k == "$dynamicRef", child.as_str())
                        {
                            n = n.saturating_add(self.reference(r)?);
                        }
                    }
                }
                J::Array(a) => {
                    for child in a {
                        n = n.saturating_add(self.size(child)?);
                    }
                }
                _ => {}
            }
            if n > MAX_EXPANDED {
                return Err(format!(
                    "schema: more than {MAX_EXPANDED} terms with its references expanded"
                ));
            }
            Ok(n)
        }

        fn reference(&mut self, r: &'a str) -> Result<u64, String> {
            let Some(pointer) = r.strip_prefix('#') else {
                return Ok(0); // not local: refused when compiled
            };
            if self.open.contains(&pointer) {
                return Ok(1);
            }
            if let Some(n) = self.sizes.get(pointer) {
                return Ok(*n);
            }
            if self.open.len() >= MAX_REF_DEPTH {
                return Err(format!(
                    "schema: references chained more than {MAX_REF_DEPTH} deep"
                ));
            }
            let Some(target) = self.root.pointer(pointer) else {
                return Ok(0); // unresolvable: refused when compiled
            };
            self.open.push(pointer);
            let n = self.size(target);
            self.open.pop();
            let n = n?;
            self.sizes.insert(pointer, n);
            Ok(n)
        }
    }
    Walk {
        root,
        sizes: HashMap::new(),
        open: Vec::new(),
    }
    .size(root)
}

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

/// Compiled schemas this process keeps, per project and type, each for the version of
/// the project's configuration it was read at (bumped when a schema changes): an event
/// of a type with a schema costs one read per version, not one per event. Bounded so no
/// tenant can push the others out: a project keeps at most [`TYPES_KEPT`] types (its
/// others are read each time), and past [`PROJECTS_KEPT`] projects the cache starts
/// again empty.
#[derive(Default)]
pub struct SchemaCache {
    kept: Mutex<HashMap<i64, ProjectSchemas>>,
}

struct ProjectSchemas {
    version: i64,
    /// A type's schema, or None: the type has none.
    by_type: HashMap<String, Option<Arc<Schema>>>,
}

pub const TYPES_KEPT: usize = 256;
pub const PROJECTS_KEPT: usize = 4_096;

impl SchemaCache {
    /// `Some(schema or none)` when known for this version.
    pub fn get(
        &self,
        project_id: i64,
        version: i64,
        event_type: &str,
    ) -> Option<Option<Arc<Schema>>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let p = kept.get(&project_id).filter(|p| p.version == version)?;
        p.by_type.get(event_type).cloned()
    }

    pub fn put(
        &self,
        project_id: i64,
        version: i64,
        event_type: &str,
        schema: Option<Arc<Schema>>,
    ) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= PROJECTS_KEPT && !kept.contains_key(&project_id) {
            kept.clear();
        }
        let p = kept.entry(project_id).or_insert_with(|| ProjectSchemas {
            version,
            by_type: HashMap::new(),
        });
        if p.version != version {
            p.version = version;
            p.by_type.clear();
        }
        if p.by_type.len() < TYPES_KEPT {
            p.by_type.insert(event_type.to_string(), schema);
        }
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
