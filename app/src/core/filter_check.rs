//! What a filter may be, checked when it is saved, so that evaluating it costs at most
//! its own size times the payload's, whatever a tenant writes (see [`super::filter`]):
//! - at most [`MAX_NODES`] terms nested at most [`MAX_DEPTH`] deep;
//! - only `event`, `data`, `subjects` and loop variables; a closed list of functions;
//! - at most [`MAX_LOOPS`] loops, each over something without a loop in it (no loop in a
//!   loop, no loop over another's result: each would multiply what the other makes), and
//!   a loop's body reads only its own variables and `event` (never `data` again per
//!   element) and builds no list or map of its own;
//! - at most [`MAX_HEAVY`] operations whose cost follows the size of their operands
//!   (`+`, `==`, `!=`, `in`, `contains`, `startsWith`, `endsWith`, `matches`, `string`,
//!   `size`), and among them at most [`MAX_ADDS`] `+` and [`MAX_PATTERNS`] `matches`;
//! - `matches` only with a literal pattern, never in a loop, compiled when checked with a
//!   small program-size limit (the `regex` crate: linear time in the text).

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

pub const MAX_NODES: usize = 200;
pub const MAX_DEPTH: usize = 32;
pub const MAX_LOOPS: usize = 4;
pub const MAX_HEAVY: usize = 16;
pub const MAX_ADDS: usize = 8;
pub const MAX_PATTERNS: usize = 2;
pub const MAX_PATTERN: usize = 256;
/// The compiled size a `matches` pattern may reach (the crate's default is 10 MB).
pub const PATTERN_PROGRAM: usize = 16 * 1024;
/// Its lazy DFA's cache: room enough that a pattern of that size keeps to the DFA
/// rather than falling back to an engine whose cost per byte follows the pattern's.
pub const PATTERN_CACHE: usize = 256 * 1024;

const VARIABLES: [&str; 3] = ["event", "data", "subjects"];
const FUNCTIONS: [&str; 33] = [
    "_?_:_",
    "_&&_",
    "_||_",
    "!_",
    "-_",
    "_-_",
    "_+_",
    "_*_",
    "_/_",
    "_%_",
    "_==_",
    "_!=_",
    "_>=_",
    "_<=_",
    "_>_",
    "_<_",
    "_[_]",
    "@in",
    "@not_strictly_false",
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "type",
    "dyn",
    "has",
    "exists_one",
];
/// Operations whose cost follows the size of what they are given.
const HEAVY: [&str; 10] = [
    "_+_",
    "_==_",
    "_!=_",
    "@in",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "string",
    "size",
];

/// A term and why it is refused.
pub type Refusal = (u64, String);

/// Walks a parsed filter; the first refusal names its term.
/// Checks a filter; its `matches` patterns, each compiled once here for every event
/// the filter will see.
pub fn check(root: &IdedExpr) -> Result<Vec<(String, regex::Regex)>, Refusal> {
    let mut check = Check::default();
    check.walk(root, 0)?;
    Ok(check.compiled)
}

#[derive(Default)]
struct Check {
    nodes: usize,
    loops: usize,
    heavy: usize,
    adds: usize,
    patterns: usize,
    compiled: Vec<(String, regex::Regex)>,
    /// Variables of the loop being walked (its element and accumulator).
    scope: Vec<String>,
    /// Inside a loop's condition or step: what runs once per element.
    in_body: bool,
    /// Inside what a loop runs over.
    in_range: bool,
}

impl Check {
    fn walk(&mut self, e: &IdedExpr, depth: usize) -> Result<(), Refusal> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err((e.id, format!("more than {MAX_NODES} terms")));
        }
        if depth > MAX_DEPTH {
            return Err((e.id, format!("nested more than {MAX_DEPTH} deep")));
        }
        let d = depth + 1;
        match &e.expr {
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Literal(_) => Ok(()),
            Expr::Select(s) => {
                // `event` is the type as a string and `subjects` a list: a field of either
                // fails on every event at run time, so it is refused when saved.
                if let Expr::Ident(name) = &s.operand.expr {
                    if !self.scope.contains(name) {
                        match name.as_str() {
                            "event" => return Err((e.id, format!(
                                "`event` is the event type itself, a string: write `event == \"payment.succeeded\"`, not `event.{}`",
                                s.field
                            ))),
                            "subjects" => return Err((e.id, format!(
                                "`subjects` is a list of strings: write `\"user_1\" in subjects`, not `subjects.{}`",
                                s.field
                            ))),
                            _ => {}
                        }
                    }
                }
                self.walk(&s.operand, d)
            }
            Expr::List(l) => {
                self.no_literal_in_body(e.id)?;
                l.elements.iter().try_for_each(|x| self.walk(x, d))
            }
            Expr::Map(m) => {
                self.no_literal_in_body(e.id)?;
                m.entries.iter().try_for_each(|entry| match &entry.expr {
                    EntryExpr::MapEntry(m) => {
                        self.walk(&m.key, d).and_then(|_| self.walk(&m.value, d))
                    }
                    EntryExpr::StructField(_) => Err((entry.id, "a struct field".into())),
                })
            }
            Expr::Call(c) => self.call(e.id, c, d),
            Expr::Comprehension(c) => {
                self.loops += 1;
                if self.loops > MAX_LOOPS {
                    return Err((e.id, format!("more than {MAX_LOOPS} loops")));
                }
                if self.in_body {
                    return Err((e.id, "a loop inside a loop".into()));
                }
                if self.in_range {
                    return Err((e.id, "a loop over another loop's result".into()));
                }
                self.in_range = true;
                let range = self.walk(&c.iter_range, d);
                self.in_range = false;
                range?;
                self.walk(&c.accu_init, d)?;
                let outer = self.scope.len();
                self.scope.push(c.iter_var.clone());
                self.scope.extend(c.iter_var2.clone());
                self.scope.push(c.accu_var.clone());
                self.in_body = true;
                let body = self
                    .walk(&c.loop_cond, d)
                    .and_then(|_| self.walk(&c.loop_step, d));
                self.in_body = false;
                let result = body.and_then(|_| self.walk(&c.result, d));
                self.scope.truncate(outer);
                result
            }
            Expr::Struct(_) => Err((e.id, "message types are not available".into())),
            Expr::Unspecified => Err((e.id, "an empty expression".into())),
        }
    }

    fn call(&mut self, id: u64, c: &cel::common::ast::CallExpr, d: usize) -> Result<(), Refusal> {
        let name = c.func_name.as_str();
        if !FUNCTIONS.contains(&name) {
            return Err((id, format!("unknown function '{name}'")));
        }
        // `map` and `filter` append each element to their accumulator (`accu + [x]`):
        // their own `+` and one-element list, not the filter's.
        let appends = name == "_+_"
            && matches!(c.args.first().map(|a| &a.expr),
                Some(Expr::Ident(n)) if self.scope.last() == Some(n));
        if appends {
            self.walk(&c.args[0], d)?;
            return match c.args.get(1).map(|a| &a.expr) {
                Some(Expr::List(l)) => l.elements.iter().try_for_each(|x| self.walk(x, d)),
                _ => c.args[1..].iter().try_for_each(|x| self.walk(x, d)),
            };
        }
        if HEAVY.contains(&name) {
            self.heavy += 1;
            if self.heavy > MAX_HEAVY {
                return Err((
                    id,
                    format!("more than {MAX_HEAVY} comparisons, joins or searches"),
                ));
            }
        }
        if name == "_+_" {
            self.adds += 1;
            if self.adds > MAX_ADDS {
                return Err((id, format!("more than {MAX_ADDS} '+'")));
            }
        }
        if name == "matches" {
            self.pattern(id, c.args.last())?;
        }
        if let Some(t) = &c.target {
            self.walk(t, d)?;
        }
        c.args.iter().try_for_each(|x| self.walk(x, d))
    }

    fn no_literal_in_body(&self, id: u64) -> Result<(), Refusal> {
        if self.in_body {
            return Err((id, "a list or map built inside a loop".into()));
        }
        Ok(())
    }

    fn ident(&self, id: u64, name: &str) -> Result<(), Refusal> {
        if self.scope.iter().any(|s| s == name) || name == "event" {
            return Ok(());
        }
        if VARIABLES.contains(&name) {
            return if self.in_body {
                Err((
                    id,
                    format!("'{name}' read inside a loop (use the loop's own variable)"),
                ))
            } else {
                Ok(())
            };
        }
        Err((
            id,
            format!("undeclared reference to '{name}' (a filter reads event, data and subjects)"),
        ))
    }

    fn pattern(&mut self, id: u64, pattern: Option<&IdedExpr>) -> Result<(), Refusal> {
        if self.in_body {
            return Err((id, "matches() inside a loop".into()));
        }
        self.patterns += 1;
        if self.patterns > MAX_PATTERNS {
            return Err((id, format!("more than {MAX_PATTERNS} matches()")));
        }
        let Some(Expr::Literal(LiteralValue::String(p))) = pattern.map(|p| &p.expr) else {
            return Err((id, "matches() takes a literal pattern".into()));
        };
        let p = p.inner();
        if p.len() > MAX_PATTERN {
            return Err((id, format!("a pattern longer than {MAX_PATTERN} bytes")));
        }
        let compiled = regex::RegexBuilder::new(p)
            .size_limit(PATTERN_PROGRAM)
            .dfa_size_limit(PATTERN_CACHE)
            .build()
            .map_err(|e| {
                let why = e.to_string();
                (
                    id,
                    format!("bad pattern: {}", why.lines().last().unwrap_or("")),
                )
            })?;
        self.compiled.push((p.to_string(), compiled));
        Ok(())
    }
}
