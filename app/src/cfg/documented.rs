//! The configuration reference, `docs/src/configuration.md`, held to the code: every
//! variable the code reads has a row there with its default and meaning, and every row
//! names a variable the code reads. A variable added to [`Config::from_env_with`] fails
//! this test until its row is added to the table.

use std::{
    cell::RefCell,
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use super::Config;

const REFERENCE: &str = "docs/src/configuration.md";

/// Read by a library rather than by name in our code, and where.
const READ_BY_LIBRARIES: &[(&str, &str)] = &[
    (
        "RUST_LOG",
        "the log filter (tracing's EnvFilter, server/src/telemetry/mod.rs)",
    ),
    (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "the OpenTelemetry exporters (opentelemetry-otlp, server/src/telemetry/mod.rs)",
    ),
];

/// Sources whose reads of the environment are not the product's configuration: the
/// benchmark's own settings.
const NOT_THE_PRODUCT: &[&str] = &["server/src/bin"];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every name the configuration asks for, everything unset but what it requires. (A
/// variable read only when another one is set would be missed: there is none.)
fn read_by_config() -> BTreeSet<String> {
    let asked = RefCell::new(BTreeSet::new());
    Config::from_env_with(|name| {
        asked.borrow_mut().insert(name.to_string());
        (name == "DATABASE_URL").then(|| "postgres://127.0.0.1/reference".to_string())
    })
    .expect("the defaults make a configuration");
    asked.into_inner()
}

/// Names read by literal elsewhere in the product's sources (`env::var` or `var_os`
/// with a string), each with the first file that reads it.
fn read_by_name() -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![
        repository().join("app/src"),
        repository().join("server/src"),
    ];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("read a source folder")
            .flatten()
        {
            let path = entry.path();
            let relative = path.strip_prefix(repository()).unwrap_or(&path).to_owned();
            let relative = relative.to_string_lossy().replace('\\', "/");
            if NOT_THE_PRODUCT.iter().any(|p| relative.starts_with(p)) {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if relative.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).expect("read a source file");
                for call in ["env::var(\"", "env::var_os(\""] {
                    for (at, _) in text.match_indices(call) {
                        let rest = &text[at + call.len()..];
                        let name = &rest[..rest.find('"').unwrap_or(0)];
                        if is_variable_name(name) {
                            found
                                .entry(name.to_string())
                                .or_insert_with(|| relative.clone());
                        }
                    }
                }
            }
        }
    }
    found
}

fn is_variable_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The rows of the reference's tables (those whose header is `| variable | default |
/// meaning |`): each variable with its default and meaning.
fn documented() -> BTreeMap<String, (String, String)> {
    let path = repository().join(REFERENCE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{REFERENCE}: {e}"));
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines().map(str::trim) {
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.first() == Some(&"variable") {
            in_table = true;
            continue;
        }
        let name = cells[0].trim_matches('`');
        if !in_table || !is_variable_name(name) {
            continue;
        }
        let cell = |i: usize| cells.get(i).map_or(String::new(), |c| c.to_string());
        let previous = rows.insert(name.to_string(), (cell(1), cell(2)));
        assert!(previous.is_none(), "{REFERENCE}: {name} has two rows");
    }
    assert!(
        !rows.is_empty(),
        "{REFERENCE}: no `| variable | default | meaning |` table"
    );
    rows
}

#[test]
fn the_reference_and_the_code_name_the_same_variables() {
    let mut read: BTreeMap<String, String> = read_by_config()
        .into_iter()
        .map(|name| (name, "app/src/cfg.rs".to_string()))
        .collect();
    for (name, file) in read_by_name() {
        read.entry(name).or_insert(file);
    }
    for (name, reader) in READ_BY_LIBRARIES {
        read.insert(name.to_string(), reader.to_string());
    }
    let documented = documented();

    let mut problems = Vec::new();
    for (name, file) in &read {
        match documented.get(name) {
            None => problems.push(format!(
                "{name} is read by {file} but has no row in {REFERENCE}: add \
                 `| `{name}` | <default> | <meaning> |` to its table"
            )),
            Some((default, meaning)) if default.is_empty() || meaning.is_empty() => problems.push(
                format!("{REFERENCE}: the row of {name} needs a default and a meaning"),
            ),
            Some(_) => {}
        }
    }
    for name in documented.keys().filter(|name| !read.contains_key(*name)) {
        problems.push(format!(
            "{REFERENCE} has a row for {name}, which no code reads: remove the row, or read \
             the variable in app/src/cfg.rs"
        ));
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}
