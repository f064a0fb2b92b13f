use serde_json::json;

use super::*;

const ORDER: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["amount", "email"],
  "properties": {
    "amount": {"type": "integer", "minimum": 1},
    "email": {"type": "string", "format": "email"},
    "id": {"type": "string", "format": "uuid"},
    "at": {"type": "string", "format": "date-time"},
    "site": {"type": "string", "format": "uri"},
    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
    "items": {"type": "array", "items": {"$ref": "#/$defs/item"}}
  },
  "$defs": {"item": {"type": "object", "required": ["qty"], "properties": {"qty": {"type": "integer"}}}}
}"##;

#[test]
fn valid_data_passes_and_invalid_names_path_and_rule() {
    let s = compile(ORDER).unwrap();
    assert_eq!(
        s.check(&json!({"amount": 5, "email": "a@example.com"})),
        None
    );
    let e = s
        .check(&json!({"amount": 0, "email": "a@example.com"}))
        .unwrap();
    assert!(
        e.starts_with("data.amount: ") && e.contains("rule `minimum`"),
        "{e}"
    );
    let e = s.check(&json!({"amount": 1})).unwrap();
    assert!(e.starts_with("data: ") && e.contains("`required`"), "{e}");
    let e = s
        .check(&json!({"amount": 1, "email": "a@example.com", "items": [{"qty": 1}, {"qty": "x"}]}))
        .unwrap();
    assert!(e.starts_with("data.items[1].qty: "), "{e}");
}

#[test]
fn formats_are_asserted() {
    let s = compile(ORDER).unwrap();
    let base = json!({"amount": 1, "email": "a@example.com"});
    for (field, bad, good) in [
        ("email", "not an email", "b@example.org"),
        ("id", "123", "0b5d1e4e-8f0e-4c5a-9a57-3f0f3c1d2e4b"),
        ("at", "yesterday", "2026-12-05T10:00:00Z"),
        ("site", "no scheme", "https://example.com/x"),
    ] {
        let mut d = base.clone();
        d[field] = json!(bad);
        let e = s
            .check(&d)
            .unwrap_or_else(|| panic!("{field} {bad} passed"));
        assert!(e.contains("`format`"), "{e}");
        d[field] = json!(good);
        assert_eq!(s.check(&d), None, "{field} {good}");
    }
}

#[test]
fn remote_refs_backtracking_patterns_and_bad_schemas_are_refused() {
    for (schema, says) in [
        (
            r#"{"$ref": "https://example.com/s.json"}"#,
            "only references within",
        ),
        (
            r#"{"$id": "https://example.com/a", "$ref": "b.json"}"#,
            "only references within",
        ),
        (r#"{"type": "string", "pattern": "^(a+)+\\1$"}"#, "schema"),
        (r#"{"type": "nope"}"#, "schema"),
        (r#"[1]"#, "must be a JSON object"),
        (
            r#"{"$schema": "http://json-schema.org/draft-07/schema#"}"#,
            "2020-12",
        ),
        ("{", "not JSON"),
    ] {
        let e = compile(schema)
            .err()
            .unwrap_or_else(|| panic!("{schema} compiled"));
        assert!(e.contains(says), "{schema}: {e}");
    }
    // Each level refers twice to the next: 2^20 terms expanded, a few KB written.
    let mut defs = serde_json::Map::new();
    for i in 0..20 {
        let next = format!("#/$defs/a{}", i + 1);
        defs.insert(
            format!("a{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next, "minimum": 0}]}),
        );
    }
    defs.insert("a20".into(), json!({"type": "integer"}));
    let doubling = json!({"$ref": "#/$defs/a0", "$defs": defs}).to_string();
    assert!(compile(&doubling)
        .unwrap_err()
        .contains("references expanded"));
    // A chain of references longer than followed.
    let mut defs = serde_json::Map::new();
    for i in 0..100 {
        defs.insert(
            format!("c{i}"),
            json!({"$ref": format!("#/$defs/c{}", i + 1)}),
        );
    }
    defs.insert("c100".into(), json!({"type": "integer"}));
    let chain = json!({"$ref": "#/$defs/c0", "$defs": defs}).to_string();
    assert!(compile(&chain).unwrap_err().contains("chained"));
    // Recursion (a tree of nodes) is fine: bounded by the data.
    let tree = r##"{"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}}"##;
    let s = compile(tree).unwrap();
    assert_eq!(s.check(&json!({"children": [{"children": []}]})), None);
    assert!(s.check(&json!({"children": [{"children": 5}]})).is_some());
    let big = format!(r#"{{"description": "{}"}}"#, "x".repeat(MAX_BYTES));
    assert!(compile(&big).unwrap_err().contains("bytes"));
}

#[test]
fn a_pathological_pattern_runs_in_linear_time() {
    // Catastrophic for a backtracking engine; the regex crate does not backtrack.
    let s = compile(r#"{"type": "string", "pattern": "^(a|a)*b$"}"#).unwrap();
    let started = std::time::Instant::now();
    assert!(s.check(&json!("a".repeat(50_000))).is_some());
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn the_cache_answers_per_version() {
    let c = SchemaCache::default();
    c.put(ProjectId::new(1), 7, "a.b", stored(ORDER));
    assert!(c.get(ProjectId::new(1), 7, "a.b").unwrap().is_some());
    assert!(c.get(ProjectId::new(1), 8, "a.b").is_none());
    assert!(c.get(ProjectId::new(2), 7, "a.b").is_none());
    c.put(ProjectId::new(1), 8, "a.b", None);
    assert!(c.get(ProjectId::new(1), 8, "a.b").unwrap().is_none());
}

/// 36 `$defs`, each referring twice to the next by the form given: 2^36 checks per event
/// if any form escapes the count.
fn doubling(form: impl Fn(usize) -> (String, serde_json::Value)) -> String {
    let mut defs = serde_json::Map::new();
    for i in 0..=36 {
        let (next, _) = form(i + 1);
        let mut def = if i < 36 {
            json!({"allOf": [{"$ref": next}, {"$ref": next, "minimum": 0}]})
        } else {
            json!({"type": "integer"})
        };
        for (k, v) in form(i).1.as_object().unwrap() {
            def[k] = v.clone();
        }
        defs.insert(format!("a{i}"), def);
    }
    json!({"$id": "https://schemas.example/root", "$ref": form(0).0, "$defs": defs}).to_string()
}

#[test]
fn references_by_anchor_id_or_encoded_pointer_are_counted_or_refused() {
    type Form = Box<dyn Fn(usize) -> (String, serde_json::Value)>;
    let forms: Vec<(&str, Form)> = vec![
        (
            "anchor",
            Box::new(|i| (format!("#a{i}"), json!({"$anchor": format!("a{i}")}))),
        ),
        (
            "encoded pointer",
            Box::new(|i| (format!("#/%24defs/a{i}"), json!({}))),
        ),
        (
            "$id-based",
            Box::new(|i| {
                (
                    format!("https://schemas.example/root#/$defs/a{i}"),
                    json!({}),
                )
            }),
        ),
        (
            "dynamic",
            Box::new(|i| (format!("#d{i}"), json!({"$dynamicAnchor": format!("d{i}")}))),
        ),
    ];
    for (name, form) in forms {
        let text = doubling(form);
        let started = std::time::Instant::now();
        let refused = compile(&text).err();
        assert!(refused.is_some(), "{name}: a 2^36 schema was accepted");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(3),
            "{name}"
        );
    }
    // A chain that refers once per level is fine, whatever the form.
    let once = r##"{"$ref": "#/%24defs/a", "$defs": {"a": {"$ref": "#b"}, "b": {"$anchor": "b", "type": "integer"}}}"##;
    let s = compile(once).unwrap();
    assert_eq!(s.check(&json!(1)), None);
    assert!(s.check(&json!("x")).is_some());
}

#[test]
fn patterns_compile_within_a_size_limit() {
    // ~2,000 distinct patterns of ~10 MiB each under the regex crate's default limit.
    let props: serde_json::Map<String, serde_json::Value> = (0..2_000)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"pattern": format!("\\w{{{}}}", 300 + i)}),
            )
        })
        .collect();
    let text = json!({"properties": props}).to_string();
    assert!(text.len() <= MAX_BYTES, "{}", text.len());
    let started = std::time::Instant::now();
    let e = compile(&text).expect_err("refused");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(e.contains("pattern"), "{e}");
    // One large pattern alone is refused too, naming the limit.
    let e = compile(r#"{"pattern": "\\w{300}"}"#).expect_err("refused");
    assert!(e.contains("pattern"), "{e}");
    // An ordinary one compiles.
    assert!(compile(r#"{"pattern": "^[A-Z]{3}-[0-9]{1,12}$"}"#).is_ok());
}

#[test]
fn an_event_past_the_checking_budget_is_refused_quickly() {
    // Every item tried against 2,000 alternatives that all fail: 4·10^8 checks on a
    // 256 KiB array if nothing bounded them.
    let alternatives: Vec<_> = (0..2_000)
        .map(|i| json!({"const": format!("v{i}")}))
        .collect();
    let text = json!({"type": "array", "items": {"anyOf": alternatives}}).to_string();
    match compile(&text) {
        Err(e) => assert!(e.contains("per value"), "{e}"),
        Ok(s) => {
            let data = json!(vec![0; 100_000]);
            let started = std::time::Instant::now();
            let e = s.check(&data).expect("refused");
            assert!(started.elapsed() < std::time::Duration::from_secs(1), "{e}");
            assert!(e.contains("too costly"), "{e}");
        }
    }
    // The same schema with fewer alternatives checks a small event normally.
    let alternatives: Vec<_> = (0..20).map(|i| json!({"const": i})).collect();
    let s =
        compile(&json!({"type": "array", "items": {"anyOf": alternatives}}).to_string()).unwrap();
    assert_eq!(s.check(&json!([1, 2, 3])), None);
    assert!(s.check(&json!([1, 99])).is_some());
}

#[test]
fn what_runs_per_value_is_counted_so() {
    use super::super::schema_cost::cost;
    let c = |v: serde_json::Value| cost(&v, MAX_EXPANDED, MAX_REF_DEPTH).unwrap();
    // A property's schema applies to one value; an item's to each.
    let one = c(json!({"properties": {"a": {"type": "integer", "minimum": 1}}}));
    assert_eq!(one.per_value, 0);
    let each = c(json!({"items": {"type": "integer", "minimum": 1}}));
    assert!(each.per_value >= 3, "{each:?}");
    // Referenced from below `items`: the target's terms run per value.
    let by_ref = c(json!({"items": {"$ref": "#/$defs/a"}, "$defs": {"a": {"enum": [1, 2, 3, 4]}}}));
    assert!(by_ref.per_value >= 5, "{by_ref:?}");
    // Siblings of `unevaluatedProperties` run per value, and recursion makes all terms so.
    let uneval = c(
        json!({"allOf": [{"properties": {"a": {"type": "string"}}}], "unevaluatedProperties": false}),
    );
    assert_eq!(
        uneval.per_value,
        uneval.terms - 1,
        "all but the object itself"
    );
    let tree = c(
        json!({"$ref": "#/$defs/n", "$defs": {"n": {"properties": {"c": {"$ref": "#/$defs/n"}}}}}),
    );
    assert_eq!(tree.per_value, tree.terms);
    // A property named like a data keyword is still a schema whose references count.
    let hidden = json!({"properties": {"enum": {"allOf": [{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/x"}]}},
        "$defs": {"x": {"const": [1, 2, 3, 4, 5, 6, 7, 8, 9]}}});
    assert!(
        c(hidden).terms > 2 * 10,
        "references below a property named enum were counted"
    );
}

#[test]
fn an_encoded_slash_in_a_pointer_is_counted_whichever_way_it_is_read() {
    // Levels named `a/N`, referred to as `#/$defs/a%2FN`: a key with a slash in it.
    let mut defs = serde_json::Map::new();
    for i in 0..30 {
        let next = format!("#/$defs/a%2F{}", i + 1);
        defs.insert(
            format!("a/{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next, "minimum": 0}]}),
        );
    }
    defs.insert("a/30".into(), json!({"type": "integer"}));
    let text = json!({"$ref": "#/$defs/a%2F0", "$defs": defs}).to_string();
    assert!(compile(&text).is_err(), "a 2^30 schema was accepted");
    // Two anchors of one name: refused.
    let twice = r##"{"$defs": {"x": {"$anchor": "a"}, "y": {"$anchor": "a", "allOf": []}}}"##;
    assert!(compile(twice).unwrap_err().contains("twice"));
}

/// `levels` levels each referring twice to the next, under `$defs` of `at`.
fn doubling_defs(levels: usize, prefix: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let next = format!("{prefix}a{}", i + 1);
        defs.insert(
            format!("a{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next, "minimum": 0}]}),
        );
    }
    defs.insert(format!("a{levels}"), json!({"type": "integer"}));
    defs
}

#[test]
fn nothing_hides_from_the_count_under_dependencies_or_nested_unevaluated() {
    // `dependencies` is compiled as an applicator: a key named `enum` below it is a
    // schema, not data.
    let inner = json!({"properties": {"enum": {"$ref": "#/dependencies/enum/$defs/a0"}},
        "$defs": doubling_defs(30, "#/dependencies/enum/$defs/")});
    let text = json!({"dependencies": {"enum": inner}}).to_string();
    assert!(
        compile(&text).is_err(),
        "a 2^30 schema under dependencies was accepted"
    );
    // `unevaluatedProperties` runs its siblings again: nested 40 deep, 2^40.
    let mut s = json!({});
    for _ in 0..40 {
        s = json!({"unevaluatedProperties": false, "anyOf": [s]});
    }
    assert!(
        compile(&s.to_string()).is_err(),
        "nested unevaluated was accepted"
    );
}

#[test]
fn a_rule_that_reads_a_long_value_counts_by_its_length() {
    // 9 doubling levels whose leaf reads a string: 512 reads of it per event.
    let mut defs = doubling_defs(9, "#/$defs/");
    defs.insert(
        "a9".into(),
        json!({"type": "string", "pattern": "^[a-z]+$"}),
    );
    let text = json!({"properties": {"s": {"$ref": "#/$defs/a0"}}, "$defs": defs}).to_string();
    let s = compile(&text).unwrap();
    assert_eq!(s.check(&json!({"s": "abc"})), None);
    let started = std::time::Instant::now();
    let e = s
        .check(&json!({"s": "a".repeat(250_000)}))
        .expect("refused");
    assert!(e.contains("too costly"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_millis(500));
    // Ordinary ECMA patterns (ASCII \w, \d) are not refused for Unicode's sizes.
    for p in [r"^\w+\.\w+$", r"^\w{3,30}$", r"^\d{1,20}$"] {
        assert!(compile(&json!({"pattern": p}).to_string()).is_ok(), "{p}");
    }
}
