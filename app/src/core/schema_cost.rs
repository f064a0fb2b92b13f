//! What checking an event against a schema can cost, known when the schema is set.
//!
//! The validator expands every `$ref` that is not recursive in place, so a few KB whose
//! levels each refer twice to the next cost 2^levels on every event. The walk below
//! follows references exactly as far as the validator does (JSON pointers, percent-encoded
//! ones too, and `$anchor` names), and refuses what it could not follow as surely
//! (`$dynamicRef`, `$recursiveRef`, a `$ref` to anything but `#…`, an `$id` below the
//! top), so the count it gives is an upper bound:
//!
//! - `terms`: every term with its references expanded (recursion counted once), each of
//!   which the validator applies to one value of the event at most, unless it is
//! - `per_value`: below a keyword applied to each of many values (`items`,
//!   `additionalProperties`, `patternProperties`, `contains`, …) or in a recursive
//!   reference: applied to each value of the event at most;
//! - `readers`: the others that read a whole value (a pattern or format reads a string
//!   of any length, `enum` and `const` compare, `uniqueItems` hashes an array).
//!
//! An event's check is then at most `terms + (per_value + readers) × weight(data)` term
//! visits, where the weight counts the event's values and its strings' bytes;
//! [`crate::core::schema`] refuses an event past its budget. Keys are walked as schemas
//! wherever they sit (an `enum`'s values too): counting too much is safe, too little not.

use std::collections::HashMap;

use serde_json::Value;

/// Keywords whose subschemas apply to each of many values of the event.
const FAN_OUT: &[&str] = &[
    "items",
    "additionalItems",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "contains",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose values are maps of names to subschemas.
const BY_NAME: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
    "dependentRequired",
];
/// Keywords that read a whole value, each once per value they apply to.
const READERS: &[&str] = &[
    "pattern",
    "format",
    "uniqueItems",
    "minLength",
    "maxLength",
    "contentEncoding",
    "contentMediaType",
];
/// Keywords that compare the value with data of the schema's: cost per term of it.
const COMPARERS: &[&str] = &["enum", "const"];
/// Keywords whose siblings the validator runs again, value by value.
const UNEVALUATED: &[&str] = &["unevaluatedProperties", "unevaluatedItems"];
/// Keywords whose targets depend on the path taken to them: not followed, so refused.
const DYNAMIC: &[&str] = &[
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    pub terms: u64,
    pub per_value: u64,
    pub readers: u64,
}

/// The schema's cost, or why it cannot be counted (or counts past `max_terms`, or chains
/// references past `max_depth`).
pub fn cost(root: &Value, max_terms: u64, max_depth: usize) -> Result<Cost, String> {
    let mut anchors = HashMap::new();
    collect(root, true, &mut anchors)?;
    let mut walk = Walk {
        root,
        anchors,
        sizes: HashMap::new(),
        open: Vec::new(),
        recursive: false,
        max_terms,
        max_depth,
    };
    let mut cost = walk.any(root, false)?;
    if walk.recursive {
        // A recursive reference re-applies its schema to values further down: any of its
        // terms may run on each value.
        cost.per_value = cost.terms;
    }
    Ok(cost)
}

/// How many term visits `data` may cost for each per-value term: its values, and its
/// strings' bytes (a pattern or format reads each byte) a sixteenth each.
pub fn weight(data: &Value) -> u64 {
    match data {
        Value::String(s) => 1 + s.len() as u64 / 16,
        Value::Array(a) => 1 + a.iter().map(weight).sum::<u64>(),
        Value::Object(o) => {
            1 + o
                .iter()
                .map(|(k, v)| 1 + k.len() as u64 / 16 + weight(v))
                .sum::<u64>()
        }
        _ => 1,
    }
}

/// The schema's patterns: `pattern` values and `patternProperties` keys.
pub fn patterns<'a>(v: &'a Value, found: &mut std::collections::BTreeSet<&'a str>) {
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                match (k.as_str(), child) {
                    ("pattern", Value::String(p)) => {
                        found.insert(p);
                    }
                    ("patternProperties", Value::Object(named)) => {
                        found.extend(named.keys().map(String::as_str));
                        named.values().for_each(|sub| patterns(sub, found));
                    }
                    _ => patterns(child, found),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|child| patterns(child, found)),
        _ => {}
    }
}

/// Finds the `$anchor`s (by name) and refuses what the walk does not follow.
fn collect<'a>(
    v: &'a Value,
    top: bool,
    anchors: &mut HashMap<&'a str, &'a Value>,
) -> Result<(), String> {
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                let k = k.as_str();
                if DYNAMIC.contains(&k) {
                    return Err(format!(
                        "schema: {k} is not supported (use $ref and $anchor)"
                    ));
                }
                match (k, child) {
                    ("$id", _) if !top => {
                        return Err("schema: $id only at the top of the schema".into());
                    }
                    ("$anchor", Value::String(name)) => {
                        // One name, one place: counting the smaller of two would let the
                        // larger pass uncounted.
                        if anchors.insert(name.as_str(), v).is_some() {
                            return Err(format!("schema: $anchor {name:?} is defined twice"));
                        }
                    }
                    ("$ref", Value::String(r)) if !r.starts_with('#') => {
                        return Err(format!(
                            "schema: $ref {r:?}: only references within the schema (#/… or #name)"
                        ));
                    }
                    _ if BY_NAME.contains(&k) => {
                        if let Value::Object(named) = child {
                            for sub in named.values() {
                                collect(sub, false, anchors)?;
                            }
                        }
                    }
                    _ => collect(child, false, anchors)?,
                }
            }
        }
        Value::Array(a) => {
            for child in a {
                collect(child, false, anchors)?;
            }
        }
        _ => {}
    }
    Ok(())
}

struct Walk<'a> {
    root: &'a Value,
    anchors: HashMap<&'a str, &'a Value>,
    /// Each reference target's cost once counted (`per_value` as reached at no fan-out).
    sizes: HashMap<*const Value, Cost>,
    open: Vec<*const Value>,
    recursive: bool,
    max_terms: u64,
    max_depth: usize,
}

impl<'a> Walk<'a> {
    fn any(&mut self, v: &'a Value, fan: bool) -> Result<Cost, String> {
        let mut cost = one(fan);
        match v {
            Value::Object(o) => {
                // `unevaluated*` asks its siblings which values they evaluated, value by
                // value, running them again: each sibling counts twice and per value (so
                // nesting them doubles at every level, as it costs).
                let again = UNEVALUATED.iter().any(|k| o.contains_key(*k));
                for (k, child) in o {
                    let k = k.as_str();
                    let child_fan = fan || again || FAN_OUT.contains(&k);
                    let mut part = if BY_NAME.contains(&k) {
                        self.by_name(child, child_fan)?
                    } else if let ("$ref", Value::String(r)) = (k, child) {
                        add(one(child_fan), self.reference(r, child_fan)?)
                    } else {
                        self.any(child, child_fan)?
                    };
                    if !child_fan {
                        if READERS.contains(&k) {
                            part.readers = part.readers.saturating_add(1);
                        } else if COMPARERS.contains(&k) {
                            part.readers = part.readers.saturating_add(part.terms);
                        }
                    }
                    if again && !UNEVALUATED.contains(&k) {
                        part = add(part, part);
                    }
                    cost = add(cost, part);
                }
            }
            Value::Array(a) => {
                for child in a {
                    cost = add(cost, self.any(child, fan)?);
                }
            }
            _ => {}
        }
        if cost.terms > self.max_terms {
            return Err(format!(
                "schema: more than {} terms with its references expanded",
                self.max_terms
            ));
        }
        Ok(cost)
    }

    fn by_name(&mut self, v: &'a Value, fan: bool) -> Result<Cost, String> {
        let Value::Object(named) = v else {
            return self.any(v, fan);
        };
        let mut cost = one(fan);
        for sub in named.values() {
            cost = add(cost, self.any(sub, fan)?);
        }
        Ok(cost)
    }

    /// The cost of a reference: of its target, or of the dearest target it could be read
    /// as (a pointer decoded whole or token by token: `a%2Fb` is `a/b` either way).
    fn reference(&mut self, r: &str, fan: bool) -> Result<Cost, String> {
        let mut dearest = Cost::default();
        for target in self.targets(r)? {
            let c = self.target_cost(target, fan)?;
            if c.terms > dearest.terms {
                dearest = c;
            }
        }
        Ok(dearest)
    }

    fn target_cost(&mut self, target: &'a Value, fan: bool) -> Result<Cost, String> {
        let key = target as *const Value;
        if self.open.contains(&key) {
            self.recursive = true;
            return Ok(one(fan));
        }
        let counted = match self.sizes.get(&key) {
            Some(c) => *c,
            None => {
                if self.open.len() >= self.max_depth {
                    return Err(format!(
                        "schema: references chained more than {} deep",
                        self.max_depth
                    ));
                }
                self.open.push(key);
                let c = self.any(target, false);
                self.open.pop();
                let c = c?;
                self.sizes.insert(key, c);
                c
            }
        };
        Ok(if fan {
            Cost {
                terms: counted.terms,
                per_value: counted.terms,
                readers: 0,
            }
        } else {
            counted
        })
    }

    /// Where `#…` may lead: a JSON pointer or an anchor's name. None found: refused when
    /// compiled.
    fn targets(&self, r: &str) -> Result<Vec<&'a Value>, String> {
        let fragment = r.strip_prefix('#').unwrap_or(r);
        let decode = |t: &str| {
            percent_encoding::percent_decode_str(t)
                .decode_utf8()
                .map(|d| d.into_owned())
                .map_err(|_| format!("schema: $ref {r:?} is not UTF-8 once decoded"))
        };
        let whole = decode(fragment)?;
        if !(whole.is_empty() || whole.starts_with('/')) {
            return Ok(self
                .anchors
                .get(whole.as_str())
                .copied()
                .into_iter()
                .collect());
        }
        let mut found: Vec<&'a Value> = self.root.pointer(&whole).into_iter().collect();
        // Token by token: each decoded, then taken as one key.
        let mut at = Some(self.root);
        for token in fragment.split('/').skip(1) {
            let token = decode(token)?.replace("~1", "/").replace("~0", "~");
            at = at.and_then(|v| match v {
                Value::Object(o) => o.get(&token),
                Value::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            });
        }
        if let Some(v) = at.filter(|_| !fragment.is_empty()) {
            if !found.iter().any(|f| std::ptr::eq(*f, v)) {
                found.push(v);
            }
        }
        Ok(found)
    }
}

fn one(fan: bool) -> Cost {
    Cost {
        terms: 1,
        per_value: fan as u64,
        readers: 0,
    }
}

fn add(a: Cost, b: Cost) -> Cost {
    Cost {
        terms: a.terms.saturating_add(b.terms),
        per_value: a.per_value.saturating_add(b.per_value),
        readers: a.readers.saturating_add(b.readers),
    }
}
