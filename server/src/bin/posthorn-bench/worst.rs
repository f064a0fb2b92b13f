//! In process: the worst definitions a tenant may set (schemas and filters), each on the
//! largest event it may send, and the ones past the limits, which must be refused fast.
//! For each: the time to compile (or refuse) it, the memory the process grew by to
//! compile and keep it, and the time to check one event (median of `runs`).

use std::time::Instant;

use app::core::{filter, schema};
use serde_json::{json, Value};

/// The largest `data` a request carries: the API's body limit, less the envelope.
const DATA_BYTES: usize = 250 * 1024;

pub fn run(runs: usize, case: Option<usize>, limit_seconds: u64) {
    let cases = schemas();
    if let Some(i) = case {
        match cases.into_iter().nth(i) {
            Some((name, text, data)) => schema_case(name, &text, &data, runs),
            None => filter_case(runs),
        }
        return;
    }
    // Each case in a process of its own: its memory measured alone, and one that does
    // not finish (an exponential schema accepted) killed at the limit.
    println!(
        "| definition | compiled (or refused) in | memory grown | an event checked in | answer |"
    );
    println!("|---|---|---|---|---|");
    let labels: Vec<(String, usize)> = cases
        .iter()
        .map(|(name, text, _)| (name.to_string(), text.len() / 1024))
        .chain([("filters on 500 endpoints".to_string(), 0)])
        .collect();
    for (i, (name, kb)) in labels.iter().enumerate() {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "worst-definitions",
                "--runs",
                &runs.to_string(),
                "--case",
                &i.to_string(),
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("run a case");
        let started = Instant::now();
        loop {
            if let Some(_status) = child.try_wait().unwrap() {
                let mut out = String::new();
                use std::io::Read;
                child
                    .stdout
                    .take()
                    .unwrap()
                    .read_to_string(&mut out)
                    .unwrap();
                print!("{out}");
                break;
            }
            if started.elapsed().as_secs() >= limit_seconds {
                let _ = child.kill();
                let _ = child.wait();
                println!(
                    "| {name} ({kb} KB) | — | — | — | did not finish in {limit_seconds} s (killed) |"
                );
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

fn schema_case(name: &str, text: &str, data: &Value, runs: usize) {
    let rss = resident();
    let started = Instant::now();
    let compiled = schema::compile(text);
    let took = started.elapsed();
    let grown = resident().saturating_sub(rss);
    let (check, answer) = match &compiled {
        Err(e) => ("—".to_string(), format!("refused: {}", short(e))),
        Ok(s) => {
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..runs {
                let t = Instant::now();
                last = s.check(data);
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(|a, b| a.partial_cmp(b).unwrap());
            (
                format!("{:.1} ms", times[times.len() / 2]),
                match last {
                    None => "accepted".to_string(),
                    Some(e) => format!("refused: {}", short(&e)),
                },
            )
        }
    };
    println!(
        "| {name} ({} KB) | {:.1} ms | {:.1} MiB | {check} | {answer} |",
        text.len() / 1024,
        took.as_secs_f64() * 1e3,
        grown as f64 / (1 << 20) as f64
    );
    drop(compiled);
}

/// 500 endpoints' filters, each with the most `matches` and costly operations allowed,
/// on one event whose strings fill the largest body.
fn filter_case(runs: usize) {
    let source = r#"data.note.matches('^([a-z]+ )*[A-Z]{3}-[0-9]{6}$') && data.ref.matches('(alpha|beta|gamma|delta)[0-9]+x$') && data.note.contains(data.ref) && data.ref + data.note != data.note + data.ref"#;
    let rss = resident();
    let started = Instant::now();
    let f = filter::compile(source).expect("the worst filter compiles");
    let took = started.elapsed();
    let grown = resident().saturating_sub(rss);
    let half = "abc ".repeat(DATA_BYTES / 8);
    let data = json!({"note": half, "ref": "b".repeat(DATA_BYTES / 2 - 16)}).to_string();
    let filters: Vec<Option<&filter::Filter>> = (0..500).map(|_| Some(&f)).collect();
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let input = filter::Input::parse("order.paid", &data, &[]);
        let v = filter::verdicts(&input, &filters);
        assert_eq!(v.len(), 500);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "| filter with 2 patterns, a search and joins, on 500 endpoints ({} B) | {:.2} ms | {:.1} MiB | {:.1} ms | verdicts for 500 |",
        source.len(),
        took.as_secs_f64() * 1e3,
        grown as f64 / (1 << 20) as f64,
        times[times.len() / 2]
    );
}

type Case = (&'static str, String, Value);

/// (name, schema, the largest event for it), in a fixed order: a case is run by its index.
fn schemas() -> Vec<Case> {
    [
        doubling_cases(),
        alternative_cases(),
        pattern_cases(),
        repeated_read_cases(),
        vec![recursive_tree()],
    ]
    .concat()
}

/// References that double at every level, by each way a schema may refer.
fn doubling_cases() -> Vec<Case> {
    vec![
        (
            "references doubling 14 levels (2^14 terms expanded)",
            doubling(14, |i| format!("#/$defs/a{i}"), |_| json!({})),
            json!(7),
        ),
        (
            "anchors doubling 36 levels (2^36)",
            doubling(
                36,
                |i| format!("#a{i}"),
                |i| json!({"$anchor": format!("a{i}")}),
            ),
            json!(7),
        ),
        (
            "encoded pointers doubling 36 levels",
            doubling(36, |i| format!("#/%24defs/a{i}"), |_| json!({})),
            json!(7),
        ),
        (
            "$id-based references doubling 36 levels",
            doubling(
                36,
                |i| format!("https://s.example/root#/$defs/a{i}"),
                |_| json!({}),
            ),
            json!(7),
        ),
        (
            "$dynamicRef doubling 36 levels",
            doubling(
                36,
                |i| format!("#d{i}"),
                |i| json!({"$dynamicAnchor": format!("d{i}")}),
            ),
            json!(7),
        ),
    ]
}

/// Per-value terms at the limit: every item tried against ~990 alternatives, and past it.
fn alternative_cases() -> Vec<Case> {
    let alternatives: Vec<Value> = (0..990)
        .map(|i| json!({"const": format!("v{i}")}))
        .collect();
    let per_item = json!({"type": "array", "items": {"anyOf": alternatives}}).to_string();
    let too_many: Vec<Value> = (0..2_100).map(|i| json!({"const": i})).collect();
    vec![
        (
            "anyOf of 990 per item, an array at the budget",
            per_item.clone(),
            json!(vec!["none"; 1_900]),
        ),
        (
            "anyOf of 990 per item, a 250 KB array",
            per_item,
            json!(vec![0; DATA_BYTES / 2]),
        ),
        (
            "anyOf of 2,100 per item",
            json!({"items": {"anyOf": too_many}}).to_string(),
            json!([1]),
        ),
    ]
}

/// Patterns at the size limit, each applied to every string; patterns past it; and a
/// pattern made to overflow its lazy DFA's cache on one 250 KB string.
fn pattern_cases() -> Vec<Case> {
    let big_strings = json!((0..100)
        .map(|i| format!("{i}{}", "q".repeat(DATA_BYTES / 100 - 8)))
        .collect::<Vec<_>>());
    let w = widest();
    let at_limit: Vec<Value> = (0..64)
        .map(|i| json!({"pattern": format!("\\w{{{w}}}z{i}")}))
        .collect();
    let past_limit: serde_json::Map<String, Value> = (0..2_000)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"pattern": format!("\\w{{{}}}", 300 + i)}),
            )
        })
        .collect();
    let thrash = format!("[ab]*a[ab]{{{}}}$", widest_thrash());
    vec![
        (
            "64 patterns at the size limit, per item, on 250 KB of strings",
            json!({"items": {"allOf": at_limit}}).to_string(),
            big_strings,
        ),
        (
            "2,000 patterns of ~10 MiB each",
            json!({"properties": past_limit}).to_string(),
            json!({}),
        ),
        (
            "a DFA-thrashing pattern on one 250 KB string",
            json!({"properties": {"s": {"pattern": thrash}}}).to_string(),
            json!({"s": "ab".repeat(DATA_BYTES / 2)}),
        ),
    ]
}

/// Nine doubling levels whose leaf reads the same long string: 512 reads of it.
fn repeated_read_cases() -> Vec<Case> {
    let mut defs = serde_json::Map::new();
    for i in 0..9 {
        let next = format!("#/$defs/a{}", i + 1);
        defs.insert(
            format!("a{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next, "minimum": 0}]}),
        );
    }
    defs.insert(
        "a9".into(),
        json!({"type": "string", "pattern": "^[a-z ]+$"}),
    );
    let readers = json!({"properties": {"s": {"$ref": "#/$defs/a0"}}, "$defs": defs}).to_string();
    vec![
        (
            "512 reads of one string, a 250 KB one",
            readers.clone(),
            json!({"s": "ab ".repeat(DATA_BYTES / 3)}),
        ),
        (
            "512 reads of one string, a 7 KB one",
            readers,
            json!({"s": "ab ".repeat(2_400)}),
        ),
    ]
}

/// Recursion: a tree, checked on data nested as deep as the API allows.
fn recursive_tree() -> Case {
    let tree = json!({"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {"c": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "anyOf": [{"required": ["c"]}, {"required": ["leaf"]}]}}}).to_string();
    let mut nested = json!({"leaf": 1});
    for _ in 0..60 {
        nested = json!({"c": [nested.clone(), {"leaf": 2}]});
    }
    ("a recursive tree, 60 levels deep", tree, nested)
}

/// A schema whose levels each refer twice to the next, by `reference`.
fn doubling(
    levels: usize,
    reference: impl Fn(usize) -> String,
    extra: impl Fn(usize) -> Value,
) -> String {
    let mut defs = serde_json::Map::new();
    for i in 0..=levels {
        let mut def = if i < levels {
            json!({"allOf": [{"$ref": reference(i + 1)}, {"$ref": reference(i + 1), "minimum": 0}]})
        } else {
            json!({"type": "integer"})
        };
        for (k, v) in extra(i).as_object().unwrap() {
            def[k] = v.clone();
        }
        defs.insert(format!("a{i}"), def);
    }
    json!({"$id": "https://s.example/root", "$ref": reference(0), "$defs": defs}).to_string()
}

/// The widest `[ab]*a[ab]{n}$` a schema may hold.
fn widest_thrash() -> usize {
    (1..2_000)
        .step_by(10)
        .take_while(|n| {
            schema::compile(&json!({"pattern": format!("[ab]*a[ab]{{{n}}}$")}).to_string()).is_ok()
        })
        .last()
        .unwrap_or(1)
}

/// The widest `\w{n}` a schema may hold (within the pattern size limit).
fn widest() -> usize {
    (1..200)
        .take_while(|n| {
            schema::compile(&json!({"pattern": format!("\\w{{{n}}}z0")}).to_string()).is_ok()
        })
        .last()
        .unwrap_or(1)
}

fn short(e: &str) -> String {
    e.chars().take(90).collect::<String>().replace('|', "\\|")
}

/// Resident memory of this process, in bytes.
fn resident() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .unwrap_or(0)
        * 4096
}
