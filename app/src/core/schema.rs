//! An event type's JSON Schema (draft 2020-12), checked when it is set and compiled once
//! per version, by the `jsonschema` crate: `$ref` only within the schema (a remote one
//! would have the server fetch URLs past the target guard: nothing is ever fetched),
//! regular expressions by the `regex` crate (linear time, no backtracking), `format`s
//! asserted. `data` that fails it is refused at ingest naming the path and the rule.
//!
//! What a schema may cost is known when it is set ([`super::schema_cost`]): its terms with
//! references expanded, and those of them applied to each value of an event. An event
//! whose check could cost more than [`CHECK_BUDGET`] term visits is refused before it is
//! checked, and every pattern compiles within a small program size, so the worst schema
//! this server accepts costs a bounded time per event and a bounded memory per process.

use crate::core::ProjectId;
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
/// Terms applied to each value of an event (below `items`, `additionalProperties`… or
/// in a recursive reference), at most.
pub const MAX_PER_VALUE: u64 = 2_000;
/// Term visits one request's checks may cost: `terms + (per_value + readers) × weight(data)` summed
/// over its events (see [`super::schema_cost::weight`]). Calibrated so that the worst
/// accepted schema on the largest accepted request costs well under a second.
pub const CHECK_BUDGET: u64 = 4_000_000;
/// Distinct patterns (`pattern` and `patternProperties` keys) a schema may hold.
pub const MAX_PATTERNS: usize = 64;
/// The compiled size a pattern may reach (the regex crate's default is 10 MiB): small, as
/// a pattern whose lazy DFA gives up runs at a cost per byte that follows its size; and
/// its lazy DFA's cache (default 2 MiB, per thread that uses it).
pub const PATTERN_PROGRAM: usize = 16 * 1024;
pub const PATTERN_CACHE: usize = 256 * 1024;
/// Schemas a project may have.
pub const MAX_PER_PROJECT: i64 = 200;

/// A compiled schema.
pub struct Schema {
    validator: jsonschema::Validator,
    cost: super::schema_cost::Cost,
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
    let cost = super::schema_cost::cost(value, MAX_EXPANDED, MAX_REF_DEPTH)?;
    if cost.per_value > MAX_PER_VALUE {
        return Err(format!(
            "schema: {} terms applied per value (below items, additionalProperties… with references \
             expanded), more than the {MAX_PER_VALUE} allowed",
            cost.per_value
        ));
    }
    check_patterns(value)?;
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
        .with_pattern_options(
            jsonschema::PatternOptions::regex()
                .size_limit(PATTERN_PROGRAM)
                .dfa_size_limit(PATTERN_CACHE),
        )
        .with_retriever(NoRemote)
        .build(value)
        .map_err(|e| {
            let at = e.instance_path().to_string();
            let mut why = e.to_string();
            if why.ends_with("is not a \"regex\"") {
                why.push_str(&format!(
                    " (not a pattern, or past the {} KiB a pattern may compile to)",
                    PATTERN_PROGRAM / 1024
                ));
            }
            if at.is_empty() {
                format!("schema: {why}")
            } else {
                format!("schema at {at}: {why}")
            }
        })?;
    Ok(Schema { validator, cost })
}

/// At most [`MAX_PATTERNS`] distinct patterns, counted before any is compiled (so a
/// refusal costs no compile at all). Each compiles within [`PATTERN_PROGRAM`] when the
/// validator translates it (ECMA's `\w` and `\d` are ASCII, smaller than Rust's).
fn check_patterns(value: &serde_json::Value) -> Result<(), String> {
    let mut found = std::collections::BTreeSet::new();
    super::schema_cost::patterns(value, &mut found);
    if found.len() > MAX_PATTERNS {
        return Err(format!(
            "schema: {} distinct patterns, more than the {MAX_PATTERNS} allowed",
            found.len()
        ));
    }
    Ok(())
}

pub const DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";

impl Schema {
    /// Term visits checking `data` may cost, at most.
    pub fn cost_of(&self, data: &serde_json::Value) -> u64 {
        let each = self.cost.per_value.saturating_add(self.cost.readers);
        self.cost
            .terms
            .saturating_add(each.saturating_mul(super::schema_cost::weight(data)))
    }

    /// None when `data` is valid; else the first failure: where in the event (`data.…`),
    /// which rule, and why. An event whose check alone would cost more than the budget is
    /// refused unchecked.
    pub fn check(&self, data: &serde_json::Value) -> Option<String> {
        let cost = self.cost_of(data);
        if cost > CHECK_BUDGET {
            return Some(too_costly(cost));
        }
        self.check_within_budget(data)
    }

    /// [`Self::check`] when the caller has counted the cost against the budget already.
    pub fn check_within_budget(&self, data: &serde_json::Value) -> Option<String> {
        if self.validator.is_valid(data) {
            return None;
        }
        // The first error only: gathering every error would build one per branch tried
        // (990 for each item of an `anyOf` of 990), a second's work for a failing event.
        let e = self.validator.validate(data).err()?;
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

/// Why an event was refused unchecked.
pub fn too_costly(cost: u64) -> String {
    format!(
        "data: too costly to check against its type's schema ({cost} checks, at most \
         {CHECK_BUDGET} per request): send smaller events or simplify the schema's \
         per-item rules"
    )
}

/// Compiled schemas this process keeps, per project and type, each for the version of
/// the project's configuration it was read at (bumped when a schema changes): an event
/// of a type with a schema costs one read per version, not one per event. Bounded so no
/// tenant can push the others out: a project keeps at most [`TYPES_KEPT`] types (its
/// others are read each time), and past [`PROJECTS_KEPT`] projects the cache starts
/// again empty.
#[derive(Default)]
pub struct SchemaCache {
    kept: Mutex<HashMap<ProjectId, ProjectSchemas>>,
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
        project_id: ProjectId,
        version: i64,
        event_type: &str,
    ) -> Option<Option<Arc<Schema>>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let p = kept.get(&project_id).filter(|p| p.version == version)?;
        p.by_type.get(event_type).cloned()
    }

    pub fn put(
        &self,
        project_id: ProjectId,
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
