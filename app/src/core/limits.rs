//! What one project may create (SPEC "Limits"): a default for each limit, which the
//! operator may override per project by name. Every tenant is hostile to every other,
//! so nothing a tenant makes is unbounded: endpoints, keys, members, the event types of
//! an endpoint, replays running at once, and how deep an event's `data` nests.

use serde_json::Value;

/// A limit, named as in SPEC and in the operator's `limits` object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Endpoints,
    ApiKeys,
    Members,
    EventTypesPerEndpoint,
    ConcurrentReplays,
    DataDepth,
    ConcurrentErasures,
}

impl Limit {
    pub const ALL: [Limit; 7] = [
        Limit::Endpoints,
        Limit::ApiKeys,
        Limit::Members,
        Limit::EventTypesPerEndpoint,
        Limit::ConcurrentReplays,
        Limit::DataDepth,
        Limit::ConcurrentErasures,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Limit::Endpoints => "endpoints",
            Limit::ApiKeys => "api_keys",
            Limit::Members => "members",
            Limit::EventTypesPerEndpoint => "event_types_per_endpoint",
            Limit::ConcurrentReplays => "concurrent_replays",
            Limit::DataDepth => "data_depth",
            Limit::ConcurrentErasures => "concurrent_erasures",
        }
    }

    pub fn default_value(self) -> u32 {
        match self {
            Limit::Endpoints => 500,
            Limit::ApiKeys => 50,
            Limit::Members => 100,
            Limit::EventTypesPerEndpoint => 100,
            Limit::ConcurrentReplays => 3,
            Limit::DataDepth => 64,
            Limit::ConcurrentErasures => 10,
        }
    }

    /// The most an operator may set. Nesting stays far below what PostgreSQL's JSON
    /// parser can take on its default stack (it failed "stack depth limit exceeded" at
    /// depths in the thousands, and took a whole group of requests down with it).
    pub fn ceiling(self) -> u32 {
        match self {
            Limit::DataDepth => MAX_DATA_DEPTH,
            Limit::ConcurrentReplays => 20,
            Limit::ConcurrentErasures => 100,
            _ => 100_000,
        }
    }

    /// What the limit counts, for messages and the operator API's document.
    pub fn what(self) -> &'static str {
        match self {
            Limit::Endpoints => "endpoints in a project",
            Limit::ApiKeys => "active API keys in a project",
            Limit::Members => "members and open invitations in a project",
            Limit::EventTypesPerEndpoint => "event types on one endpoint",
            Limit::ConcurrentReplays => "bulk replays running at once in a project",
            Limit::DataDepth => "levels of nesting in an event's data",
            Limit::ConcurrentErasures => "erasures by subject running at once in a project",
        }
    }
}

/// The deepest `data` an operator may allow.
pub const MAX_DATA_DEPTH: u32 = 256;

/// One project's limits: the defaults with the operator's overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    values: [u32; 7],
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            values: Limit::ALL.map(Limit::default_value),
        }
    }
}

impl Limits {
    /// From the project's `limits` object; unknown names and values out of range are
    /// ignored here (the operator API refuses them when they are set: [`check_overrides`]).
    pub fn from_overrides(overrides: &Value) -> Limits {
        let mut limits = Limits::default();
        for (i, limit) in Limit::ALL.iter().enumerate() {
            if let Some(v) = overrides.get(limit.name()).and_then(Value::as_u64) {
                if v >= 1 && v <= limit.ceiling() as u64 {
                    limits.values[i] = v as u32;
                }
            }
        }
        limits
    }

    pub fn get(&self, limit: Limit) -> u32 {
        self.values[Limit::ALL.iter().position(|l| *l == limit).unwrap_or(0)]
    }

    /// `Err` with the message a refused request gets when `used` of `limit` are taken
    /// and `adding` more are asked for.
    pub fn admit(&self, limit: Limit, used: u64, adding: u64) -> Result<(), String> {
        let max = self.get(limit) as u64;
        if used + adding > max {
            return Err(reached(limit, max));
        }
        Ok(())
    }
}

/// The message of a `limit_reached` answer: which limit, and its value.
pub fn reached(limit: Limit, max: u64) -> String {
    format!(
        "limit reached: {} (at most {max} {})",
        limit.name(),
        limit.what()
    )
}

/// Checks an operator's `limits` object: known names, whole numbers from 1 to each
/// limit's ceiling.
pub fn check_overrides(overrides: &Value) -> Result<(), String> {
    let Some(map) = overrides.as_object() else {
        return Err("limits: must be an object".into());
    };
    for (name, v) in map {
        let Some(limit) = Limit::ALL.iter().find(|l| l.name() == name) else {
            return Err(format!("limits: unknown limit `{name}`"));
        };
        match v.as_u64() {
            Some(n) if n >= 1 && n <= limit.ceiling() as u64 => {}
            _ => {
                return Err(format!(
                    "limits.{name}: a whole number from 1 to {}",
                    limit.ceiling()
                ))
            }
        }
    }
    Ok(())
}

/// How deeply the JSON text nests (`{}` is 1, `{"a":[1]}` is 2), counted without
/// recursion and without parsing, and given up on past `stop` (returns `stop + 1`), so a
/// hostile body of any depth costs one pass over at most its bytes and no stack.
/// Brackets inside strings, escaped quotes included, do not count.
pub fn json_depth(text: &str, stop: u32) -> u32 {
    let mut depth: u32 = 0;
    let mut deepest: u32 = 0;
    let mut in_string = false;
    let mut escaped = false;
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > deepest {
                    deepest = depth;
                    if deepest > stop {
                        return stop + 1;
                    }
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_defaults_are_the_specifications() {
        let l = Limits::default();
        assert_eq!(l.get(Limit::Endpoints), 500);
        assert_eq!(l.get(Limit::ApiKeys), 50);
        assert_eq!(l.get(Limit::Members), 100);
        assert_eq!(l.get(Limit::EventTypesPerEndpoint), 100);
        assert_eq!(l.get(Limit::ConcurrentReplays), 3);
        assert_eq!(l.get(Limit::DataDepth), 64);
    }

    #[test]
    fn an_operator_override_replaces_one_default_within_its_ceiling() {
        let l = Limits::from_overrides(&json!({"endpoints": 2, "data_depth": 100_000}));
        assert_eq!(l.get(Limit::Endpoints), 2);
        // Past the ceiling: ignored, the default stays.
        assert_eq!(l.get(Limit::DataDepth), 64);
        assert!(check_overrides(&json!({"data_depth": 100_000})).is_err());
        assert!(check_overrides(&json!({"nope": 1})).is_err());
        assert!(check_overrides(&json!({"endpoints": 0})).is_err());
        assert!(check_overrides(&json!({"endpoints": 10, "api_keys": 3})).is_ok());
    }

    #[test]
    fn admitting_counts_what_is_used_and_what_is_asked_for() {
        let l = Limits::from_overrides(&json!({"endpoints": 2}));
        assert!(l.admit(Limit::Endpoints, 1, 1).is_ok());
        let refused = l.admit(Limit::Endpoints, 2, 1).unwrap_err();
        assert!(refused.contains("endpoints"), "{refused}");
        assert!(refused.contains('2'), "{refused}");
    }

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        assert_eq!(json_depth("{}", 64), 1);
        assert_eq!(json_depth(r#"{"a":[1,{"b":2}]}"#, 64), 3);
        assert_eq!(json_depth(r#"{"a":"[[[[{{{{"}"#, 64), 1);
        assert_eq!(json_depth(r#"{"a":"\"[[[["}"#, 64), 1);
        assert_eq!(json_depth(r#"{"a":"\\","b":[[]]}"#, 64), 3);
    }

    #[test]
    fn depth_gives_up_past_the_limit_at_once() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert_eq!(json_depth(&deep, 64), 65);
        let at = "[".repeat(64) + &"]".repeat(64);
        assert_eq!(json_depth(&at, 64), 64);
    }
}
