//! An endpoint's filter: a CEL expression over `event` (its type), `data` (its payload)
//! and `subjects`, evaluated by the `cel` crate at fan-out. An event it does not match
//! makes no attempt for the endpoint.
//!
//! A filter is checked when it is saved, so that its cost at fan-out is bounded by its
//! own size times the payload's, whatever a tenant writes: at most [`MAX_BYTES`] and
//! [`MAX_NODES`]; only `event`, `data`, `subjects` and loop variables; a closed list of
//! functions; at most [`MAX_LOOPS`] loops (`exists`, `all`, `exists_one`, `map`,
//! `filter`), none inside another, and a loop's body reads only its own variables (it
//! cannot read `data` again once per element); at most [`MAX_ADDS`] `+` (each may copy
//! what it joins); `matches` only with a literal pattern (the `regex` crate: linear time)
//! and never in a loop (it compiles its pattern per call).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

pub const MAX_BYTES: usize = 1024;
pub const MAX_NODES: usize = 200;
pub const MAX_LOOPS: usize = 4;
pub const MAX_ADDS: usize = 8;
pub const MAX_PATTERN: usize = 256;
/// How deep the expression may nest (the evaluator recurses once per level).
pub const MAX_DEPTH: usize = 32;

/// A checked, compiled filter.
pub struct Filter {
    source: String,
    program: cel::Program,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Filter({:?})", self.source)
    }
}

/// What a filter said of one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Match,
    /// It evaluated to false.
    NoMatch,
    /// It could not be evaluated for this event (a missing key, a type it cannot
    /// compare, a result that is not a bool): no attempt, as for false, with the reason.
    Failed(String),
}

impl Verdict {
    pub fn matched(&self) -> bool {
        *self == Verdict::Match
    }

    /// Why no attempt was made, in words (None when it matched).
    pub fn reason(&self) -> Option<String> {
        match self {
            Verdict::Match => None,
            Verdict::NoMatch => Some("the filter was false".into()),
            Verdict::Failed(why) => Some(format!("the filter failed: {why}")),
        }
    }
}

/// Checks and compiles `source`; the error names what is wrong and where ("at 1:14").
/// The parser recurses once per nesting level, deeper than a server thread's stack
/// allows for the most deeply nested kilobyte: it runs on a thread of its own with a
/// stack sized for that.
pub fn compile(source: &str) -> Result<Filter, String> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(PARSER_STACK)
            .spawn_scoped(s, || compile_here(source))
            .map_err(|e| format!("filter: not compiled ({e})"))?
            .join()
            .unwrap_or_else(|_| Err("filter: not compiled".into()))
    })
}

const PARSER_STACK: usize = 64 << 20;

fn compile_here(source: &str) -> Result<Filter, String> {
    if source.trim().is_empty() {
        return Err("filter: empty (send null to remove it)".into());
    }
    if source.len() > MAX_BYTES {
        return Err(format!(
            "filter: {} bytes, more than the {MAX_BYTES} allowed",
            source.len()
        ));
    }
    let program = cel::Program::compile(source).map_err(|errors| match errors.errors.first() {
        Some(e) => format!("filter: {} at {}:{}", e.msg, e.pos.0, e.pos.1),
        None => "filter: does not parse".to_string(),
    })?;
    let mut check = Check::default();
    check.walk(program.expression(), 0).map_err(|(id, why)| {
        match program.source_info().offset_for(id) {
            Some((start, _)) => {
                let (line, column) = position(source, start as usize);
                format!("filter: {why} at {line}:{column}")
            }
            None => format!("filter: {why}"),
        }
    })?;
    Ok(Filter {
        source: source.to_string(),
        program,
    })
}

/// The line and column (from 1, in characters) of a byte offset.
fn position(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..source.floor_char_boundary(offset.min(source.len()))];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// [`compile`], remembered by source: the fan-out of every event reads its endpoints'
/// filters, and compiling is far dearer than evaluating. Bounded: past
/// [`KEPT_FILTERS`] distinct filters the cache starts again empty.
pub fn compiled(source: &str) -> Result<Arc<Filter>, String> {
    static KEPT: Mutex<Option<HashMap<String, Arc<Filter>>>> = Mutex::new(None);
    if let Some(f) = KEPT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|k| k.get(source))
    {
        return Ok(f.clone());
    }
    let filter = Arc::new(compile(source)?);
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let kept = kept.get_or_insert_with(HashMap::new);
    if kept.len() >= KEPT_FILTERS {
        kept.clear();
    }
    kept.insert(source.to_string(), filter.clone());
    Ok(filter)
}

pub const KEPT_FILTERS: usize = 10_000;

/// A filter that matches no event (`false`).
pub fn never() -> Arc<Filter> {
    compiled("false").expect("false compiles")
}

/// One event as filters see it, converted once for all of its endpoints.
pub struct Input {
    event: String,
    data: cel::Value,
    subjects: Vec<String>,
}

impl Input {
    pub fn new(event: &str, data: &serde_json::Value, subjects: &[String]) -> Self {
        Input {
            event: event.to_string(),
            data: to_cel(data),
            subjects: subjects.to_vec(),
        }
    }

    /// From the payload as stored (valid JSON text).
    pub fn parse(event: &str, data_json: &str, subjects: &[String]) -> Self {
        let data = serde_json::from_str(data_json).unwrap_or(serde_json::Value::Null);
        Self::new(event, &data, subjects)
    }

    fn context(&self) -> Result<cel::Context<'static, 'static>, String> {
        let mut ctx = cel::Context::default();
        ctx.add_variable("event", self.event.as_str())
            .and_then(|_| ctx.add_variable("subjects", &self.subjects))
            .map_err(|e| e.to_string())?;
        ctx.add_variable_from_value("data", self.data.clone());
        Ok(ctx)
    }
}

/// A JSON value for CEL. A whole number is an `int` when it fits one (a `uint` only past
/// that), so that arithmetic with int literals works (`data.order % 2 == 0`); CEL compares
/// ints, uints and doubles with each other as numbers.
fn to_cel(v: &serde_json::Value) -> cel::Value {
    use serde_json::Value as J;
    match v {
        J::Null => cel::Value::Null,
        J::Bool(b) => cel::Value::Bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => cel::Value::String(Arc::new(s.clone())),
        J::Array(a) => cel::Value::List(Arc::new(a.iter().map(to_cel).collect())),
        J::Object(o) => o
            .iter()
            .map(|(k, v)| (k.clone(), to_cel(v)))
            .collect::<HashMap<String, cel::Value>>()
            .into(),
    }
}

/// Evaluates each filter against one event (the input converted once); `None` filters
/// match everything.
pub fn verdicts(input: &Input, filters: &[Option<&Filter>]) -> Vec<Verdict> {
    if filters.iter().all(Option::is_none) {
        return vec![Verdict::Match; filters.len()];
    }
    let ctx = match input.context() {
        Ok(ctx) => ctx,
        Err(why) => {
            return filters
                .iter()
                .map(|f| match f {
                    None => Verdict::Match,
                    Some(_) => Verdict::Failed(why.clone()),
                })
                .collect();
        }
    };
    filters
        .iter()
        .map(|f| match f {
            None => Verdict::Match,
            Some(f) => f.eval_in(&ctx),
        })
        .collect()
}

impl Filter {
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn eval(&self, input: &Input) -> Verdict {
        verdicts(input, &[Some(self)]).remove(0)
    }

    fn eval_in(&self, ctx: &cel::Context<'_, '_>) -> Verdict {
        match self.program.execute(ctx) {
            Ok(cel::Value::Bool(true)) => Verdict::Match,
            Ok(cel::Value::Bool(false)) => Verdict::NoMatch,
            Ok(other) => {
                Verdict::Failed(format!("it gave {}, not true or false", type_name(&other)))
            }
            Err(e) => Verdict::Failed(e.to_string().chars().take(200).collect()),
        }
    }
}

fn type_name(v: &cel::Value) -> &'static str {
    match v {
        cel::Value::Int(_) | cel::Value::UInt(_) | cel::Value::Float(_) => "a number",
        cel::Value::String(_) => "a string",
        cel::Value::List(_) => "a list",
        cel::Value::Map(_) => "a map",
        cel::Value::Null => "null",
        _ => "a value",
    }
}

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

#[derive(Default)]
struct Check {
    nodes: usize,
    loops: usize,
    adds: usize,
    /// Variables of the loops being walked (their element and accumulator).
    scope: Vec<String>,
    /// Inside a loop's condition or step: what runs once per element.
    in_body: bool,
}

type Refusal = (u64, String);

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
            Expr::Select(s) => self.walk(&s.operand, d),
            Expr::List(l) => l.elements.iter().try_for_each(|x| self.walk(x, d)),
            Expr::Map(m) => m.entries.iter().try_for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(m) => self.walk(&m.key, d).and_then(|_| self.walk(&m.value, d)),
                EntryExpr::StructField(_) => Err((entry.id, "a struct field".into())),
            }),
            Expr::Call(c) => {
                if !FUNCTIONS.contains(&c.func_name.as_str()) {
                    return Err((e.id, format!("unknown function '{}'", c.func_name)));
                }
                // A `map` or `filter` appends to its accumulator with a `+` of its own.
                let appends = matches!(c.args.first().map(|a| &a.expr),
                    Some(Expr::Ident(n)) if self.scope.last() == Some(n));
                if c.func_name == "_+_" && !appends {
                    self.adds += 1;
                    if self.adds > MAX_ADDS {
                        return Err((e.id, format!("more than {MAX_ADDS} '+'")));
                    }
                }
                if c.func_name == "matches" {
                    self.pattern(e.id, c.args.last())?;
                }
                if let Some(t) = &c.target {
                    self.walk(t, d)?;
                }
                c.args.iter().try_for_each(|x| self.walk(x, d))
            }
            Expr::Comprehension(c) => {
                self.loops += 1;
                if self.loops > MAX_LOOPS {
                    return Err((e.id, format!("more than {MAX_LOOPS} loops")));
                }
                if self.in_body {
                    return Err((e.id, "a loop inside a loop".into()));
                }
                self.walk(&c.iter_range, d)?;
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

    fn ident(&self, id: u64, name: &str) -> Result<(), Refusal> {
        if self.scope.iter().any(|s| s == name) || (name == "event") {
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

    fn pattern(&self, id: u64, pattern: Option<&IdedExpr>) -> Result<(), Refusal> {
        if self.in_body {
            return Err((id, "matches() inside a loop".into()));
        }
        let Some(Expr::Literal(cel::common::ast::LiteralValue::String(p))) =
            pattern.map(|p| &p.expr)
        else {
            return Err((id, "matches() takes a literal pattern".into()));
        };
        let p = p.inner();
        if p.len() > MAX_PATTERN {
            return Err((id, format!("a pattern longer than {MAX_PATTERN} bytes")));
        }
        regex::Regex::new(p).map(|_| ()).map_err(|e| {
            (
                id,
                format!(
                    "bad pattern: {}",
                    e.to_string().lines().last().unwrap_or("")
                ),
            )
        })
    }
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
