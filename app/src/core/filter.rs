//! An endpoint's filter: a CEL expression over `event` (its type), `data` (its payload)
//! and `subjects`, evaluated by the `cel` crate at fan-out. An event it does not match
//! makes no attempt for the endpoint.
//!
//! A filter is checked when it is saved ([`super::filter_check`]), so that its cost at
//! fan-out is bounded by its own size times the payload's, whatever a tenant writes.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

pub use super::filter_check::{MAX_ADDS, MAX_DEPTH, MAX_HEAVY, MAX_LOOPS, MAX_NODES};

pub const MAX_BYTES: usize = 1024;

/// A checked, compiled filter.
pub struct Filter {
    source: String,
    program: cel::Program,
    /// Its `matches` patterns, compiled once when the filter is (the cel crate's own
    /// `matches` compiles its pattern on every call: ~1,000 compiles per event for 500
    /// endpoints with two patterns each).
    patterns: Arc<Vec<(String, regex::Regex)>>,
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
/// At most [`COMPILING`] such threads run at once, whoever asks: a flood of filters
/// waits its turn rather than taking the process's memory.
pub fn compile(source: &str) -> Result<Filter, String> {
    let _slot = CompileSlot::take();
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(PARSER_STACK)
            .spawn_scoped(s, || compile_here(source))
            .map_err(|e| format!("filter: not compiled now ({e}); try again"))?
            .join()
            .unwrap_or_else(|_| Err("filter: not compiled".into()))
    })
}

const PARSER_STACK: usize = 64 << 20;
pub const COMPILING: usize = 2;

/// One of the [`COMPILING`] slots, given back when dropped (a panic included).
struct CompileSlot;

static SLOTS: (std::sync::Mutex<usize>, std::sync::Condvar) =
    (std::sync::Mutex::new(0), std::sync::Condvar::new());

impl CompileSlot {
    fn take() -> CompileSlot {
        let (taken, freed) = &SLOTS;
        let mut n = taken.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= COMPILING {
            n = freed.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        CompileSlot
    }
}

impl Drop for CompileSlot {
    fn drop(&mut self) {
        let (taken, freed) = &SLOTS;
        *taken.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        freed.notify_one();
    }
}

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
        Some(e) => format!(
            "filter: {} at {}:{}{DETAIL}{}",
            parse_error_in_words(&e.msg),
            e.pos.0,
            e.pos.1,
            e.msg
        ),
        None => "filter: does not parse".to_string(),
    })?;
    let patterns = super::filter_check::check(program.expression()).map_err(|(id, why)| {
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
        patterns: Arc::new(patterns),
    })
}

/// Between a refusal in words and the parser's own message, for those who want it (the
/// dashboard folds it under "Details").
pub const DETAIL: &str = " — parser: ";

/// A refusal's words and, if it has one, the parser's raw message.
pub fn words_and_detail(error: &str) -> (&str, Option<&str>) {
    match error.split_once(DETAIL) {
        Some((words, raw)) => (words, Some(raw)),
        None => (error, None),
    }
}

/// The parser's message ("mismatched input '<EOF>' expecting {'[', …}") as a person
/// would say it.
fn parse_error_in_words(msg: &str) -> String {
    let msg = msg.strip_prefix("Syntax error: ").unwrap_or(msg);
    let quoted = msg.split('\'').nth(1).unwrap_or("").to_string();
    if msg.contains("'<EOF>'") {
        "the filter stops before it is complete (a value, a closing bracket or a closing \
         quote is missing at the end)"
            .into()
    } else if msg.starts_with("mismatched input") || msg.starts_with("extraneous input") {
        format!("`{quoted}` is not expected here")
    } else if msg.starts_with("token recognition error") {
        format!("`{quoted}` is not part of a filter (text goes in quotes: 'eu')")
    } else if msg.starts_with("no viable alternative") {
        format!("`{quoted}` cannot be read as an expression")
    } else {
        msg.to_string()
    }
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

/// A filter that matches no event (`false`): what a stored filter that no longer
/// compiles becomes. Built once, on the calling thread (it nests nothing).
pub fn never() -> Arc<Filter> {
    static NEVER: std::sync::LazyLock<Option<Arc<Filter>>> =
        std::sync::LazyLock::new(|| compile_here("false").ok().map(Arc::new));
    NEVER.clone().unwrap_or_else(|| {
        Arc::new(Filter {
            source: String::new(),
            program: cel::Program::compile("false").expect("false parses"),
            patterns: Arc::default(),
        })
    })
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

    /// From the payload as stored (valid JSON text). Past the JSON reader's 128 levels
    /// (`data_depth` allows more) the filters see `data` as null.
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
        ctx.add_function("matches", matches)
            .map_err(|e| e.to_string())?;
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
        PATTERNS.with(|p| *p.borrow_mut() = self.patterns.clone());
        let result = self.program.execute(ctx);
        PATTERNS.with(|p| *p.borrow_mut() = Arc::default());
        match result {
            Ok(cel::Value::Bool(true)) => Verdict::Match,
            Ok(cel::Value::Bool(false)) => Verdict::NoMatch,
            Ok(other) => {
                Verdict::Failed(format!("it gave {}, not true or false", type_name(&other)))
            }
            Err(e) => Verdict::Failed(why(&e)),
        }
    }
}

thread_local! {
    /// The patterns of the filter being evaluated on this thread (evaluation runs start to
    /// end on one thread), for [`matches`].
    static PATTERNS: std::cell::RefCell<Arc<Vec<(String, regex::Regex)>>> = Default::default();
}

/// `text.matches(pattern)` and `matches(text, pattern)`, with the evaluated filter's
/// pattern as compiled when the filter was. Every pattern is a literal checked at save,
/// so one is always there; were it not, the filter fails rather than compile per call.
fn matches(
    cel::extractors::This(text): cel::extractors::This<Arc<String>>,
    pattern: Arc<String>,
) -> Result<bool, cel::ExecutionError> {
    PATTERNS.with(|kept| {
        kept.borrow()
            .iter()
            .find(|(p, _)| p.as_str() == pattern.as_str())
            .map(|(_, re)| re.is_match(&text))
            .ok_or_else(|| cel::ExecutionError::function_error("matches", "pattern not compiled"))
    })
}

/// Why evaluation failed, in words that name keys and types but never the event's values
/// (the reason is kept with the event, and a value could be personal data).
fn why(e: &cel::ExecutionError) -> String {
    use cel::ExecutionError as E;
    let text = match e {
        E::NoSuchKey(k) => format!("no such key: {k}"),
        E::UndeclaredReference(r) => format!("undeclared reference to '{r}'"),
        E::NoSuchOverload(o) => o.to_string(),
        E::UnexpectedType { got, want } => format!("got {got} where {want} was wanted"),
        E::ValuesNotComparable(a, b) => {
            format!("{} cannot be compared to {}", type_name(a), type_name(b))
        }
        E::DivisionByZero(_) | E::RemainderByZero(_) => "division by zero".into(),
        E::Overflow(op, _, _) => format!("overflow in '{op}'"),
        E::IndexOutOfBounds(_) => "index out of bounds".into(),
        E::FunctionError { function, .. } => format!("{function}() failed"),
        _ => "the values of this event do not fit the filter".into(),
    };
    text.chars().take(200).collect()
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

/// Why an endpoint's filter as it is now keeps the event out (None: it passes, or there
/// is no filter): what Retry and bulk replay ask before they send again. A filter that
/// no longer compiles keeps everything out, as at ingest.
pub fn keeps_out(
    filter: Option<&str>,
    event_type: &str,
    data_json: &str,
    subjects: &[String],
) -> Option<String> {
    let f = match compiled(filter?) {
        Ok(f) => f,
        Err(_) => never(),
    };
    f.eval(&Input::parse(event_type, data_json, subjects))
        .reason()
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
