use super::*;

fn input(data: &str) -> Input {
    Input::parse("payment.succeeded", data, &["user_1".to_string()])
}

fn verdict(filter: &str, data: &str) -> Verdict {
    compile(filter).unwrap().eval(&input(data))
}

#[test]
fn json_numbers_compare_with_int_and_double_literals() {
    let data = r#"{"amount": 1500, "price": 12.5, "neg": -3, "region": "eu"}"#;
    for f in [
        "data.amount > 1000",
        "data.amount > 1000.0",
        "data.amount == 1500",
        "data.amount == 1500.0",
        "data.price > 12",
        "data.price < 13u",
        "data.neg < 0",
        "data.region == 'eu' && event.startsWith('payment.')",
        "'user_1' in subjects",
        "data.amount % 2 == 0 && data.amount + 1 == 1501",
        "data.neg * 2 == -6",
    ] {
        assert_eq!(verdict(f, data), Verdict::Match, "{f}");
    }
    assert_eq!(verdict("data.amount > 2000", data), Verdict::NoMatch);
    assert_eq!(
        verdict("data.region in ['us', 'ca']", data),
        Verdict::NoMatch
    );
}

#[test]
fn loops_over_lists_of_the_payload() {
    let data = r#"{"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 5}]}"#;
    assert!(verdict("data.items.exists(i, i.sku == 'b' && i.qty > 2)", data).matched());
    assert!(!verdict("data.items.all(i, i.qty > 2)", data).matched());
    assert!(verdict("data.items.map(i, i.qty * 2)[1] == 10", data).matched());
    assert!(verdict("data.items.filter(i, i.qty > 2).size() == 1", data).matched());
}

#[test]
fn a_failure_names_keys_and_types_never_values() {
    let v = verdict("data.email > 5", r#"{"email": "alice@example.com"}"#);
    let Verdict::Failed(why) = &v else {
        panic!("{v:?}")
    };
    assert!(!why.contains("alice"), "{why}");
}

#[test]
fn a_missing_key_or_a_non_bool_fails_and_says_why() {
    let v = verdict("data.amount > 1", r#"{"other": 1}"#);
    assert!(
        matches!(&v, Verdict::Failed(why) if why.contains("amount")),
        "{v:?}"
    );
    assert!(!v.matched());
    assert_eq!(
        verdict("has(data.amount) && data.amount > 1", "{}"),
        Verdict::NoMatch
    );
    let v = verdict("data.amount", r#"{"amount": 3}"#);
    assert_eq!(
        v,
        Verdict::Failed("it gave a number, not true or false".into())
    );
    assert!(v.reason().unwrap().starts_with("the filter failed"));
}

#[test]
fn parse_errors_name_the_position() {
    let e = compile("data.amount >").unwrap_err();
    let (words, raw) = words_and_detail(&e);
    assert_eq!(
        words,
        "filter: the filter stops before it is complete (a value, a closing bracket or a \
         closing quote is missing at the end) at 1:14"
    );
    assert!(raw.unwrap().contains("mismatched input '<EOF>'"), "{e}");
    let e = compile("data.region == eu#").unwrap_err();
    let (words, _) = words_and_detail(&e);
    assert!(words.contains("`#` is not part of a filter"), "{words}");
    let e = compile("data.a > 1 ) && true").unwrap_err();
    let (words, raw) = words_and_detail(&e);
    assert!(words.contains("`)` is not expected here"), "{words}");
    assert!(raw.is_some());
    let e = compile("data.amount > 1 &&\n  dat.region == 'eu'").unwrap_err();
    assert_eq!(
        e,
        "filter: undeclared reference to 'dat' (a filter reads event, data and subjects) at 2:3"
    );
}

#[test]
fn a_field_of_event_or_subjects_is_refused_with_what_to_write() {
    let e = compile("event.type == 'payment.succeeded'").unwrap_err();
    assert!(e.contains("`event` is the event type itself"), "{e}");
    assert!(e.contains("event == \"payment.succeeded\""), "{e}");
    let e = compile("subjects.size() > 0 && subjects.first == 'a'").unwrap_err();
    assert!(e.contains("`subjects` is a list of strings"), "{e}");
    // A loop's own variable of that name is the element, not the event.
    assert!(compile("data.items.exists(event, event.sku == 'a')").is_ok());
    assert!(compile("event.startsWith('payment.') && size(subjects) > 0").is_ok());
}

#[test]
fn what_would_cost_too_much_is_refused_when_saved() {
    let refused = |f: &str, part: &str| {
        let e = compile(f).unwrap_err();
        assert!(e.contains(part), "{f}: {e}");
    };
    refused(&"x".repeat(MAX_BYTES + 1), "bytes");
    refused(&["data.s"; MAX_ADDS + 2].join(" + "), "'+'");
    refused(
        "data.a.exists(x, data.b.exists(y, x == y))",
        "inside a loop",
    );
    refused("data.a.exists(x, x == data.b)", "'data' read inside a loop");
    refused("data.a.all(x, x.matches('a+'))", "matches() inside a loop");
    refused("data.s.matches(data.p)", "literal pattern");
    refused("data.s.matches('(')", "bad pattern");
    refused(
        "data.a.map(x, x).map(y, y).size() > 0",
        "a loop over another loop's result",
    );
    refused(
        "data.a.map(x, [x, x, x]).size() > 0",
        "a list or map built inside a loop",
    );
    refused(
        "data.a.exists(x, x == 1) || data.b.exists(x, x == 1) || data.c.exists(x, x == 1) \
         || data.d.exists(x, x == 1) || data.e.exists(x, x == 1)",
        "more than 4 loops",
    );
    refused(
        &["data.s == 'x'"; MAX_HEAVY + 1].join(" || "),
        "comparisons, joins or searches",
    );
    refused(
        "data.a.matches('a') && data.b.matches('b') && data.c.matches('c')",
        "matches()",
    );
    refused(r"data.s.matches('\\w{1,500}')", "bad pattern");
    refused(&format!("{}1{}", "[".repeat(40), "]".repeat(40)), "deep");
    refused("timestamp(data.t) > now", "unknown function");
    refused(&["a>1"; 70].join("||").replace("a", "data.a"), "terms");
    refused("  ", "empty");
    // Parentheses add no terms; the parser's own recursion runs on a stack sized for it.
    let deep = format!("{}true{}", "(".repeat(500), ")".repeat(500));
    assert!(compile(&deep).is_err() || compile(&deep).is_ok());
}

#[test]
fn loop_variables_and_event_are_readable_in_loops() {
    assert!(compile("data.items.exists(i, i.kind == event)").is_ok());
    assert!(compile("subjects.exists(s, s.startsWith('user_'))").is_ok());
    assert!(compile("data.s.matches('^ord_[0-9]+$')").is_ok());
}

#[test]
fn a_hostile_filter_stays_cheap_on_a_large_payload() {
    // The longest chain of joins allowed, over a 200 KB string: bounded by the checks.
    let big = format!(
        r#"{{"s": "{}", "l": [{}]}}"#,
        "x".repeat(200_000),
        ["1"; 50_000].join(",")
    );
    let joins = ["data.s"; MAX_ADDS].join(" + ");
    let f = compile(&format!(
        "size({joins}) > 0 && data.l.map(x, x + x).size() > 0"
    ))
    .unwrap();
    let i = input(&big);
    let started = std::time::Instant::now();
    assert!(f.eval(&i).matched());
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn compiled_filters_are_kept_by_source() {
    let a = compiled("data.x == 1").unwrap();
    let b = compiled("data.x == 1").unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert!(compiled("data.x ==").is_err());
}

#[test]
fn verdicts_convert_the_event_once_for_all_filters() {
    let f = compile("data.n > 1").unwrap();
    let g = compile("data.n > 5").unwrap();
    let v = verdicts(&input(r#"{"n": 3}"#), &[Some(&f), None, Some(&g)]);
    assert_eq!(v, vec![Verdict::Match, Verdict::Match, Verdict::NoMatch]);
}

#[test]
fn patterns_match_in_both_forms_compiled_once_with_the_filter() {
    let f =
        compile(r#"data.sku.matches('^[A-Z]{3}-[0-9]+$') && matches(event, '^order[.]')"#).unwrap();
    assert_eq!(f.patterns.len(), 2);
    let yes = Input::parse("order.paid", r#"{"sku": "ABC-12"}"#, &[]);
    let no = Input::parse("order.paid", r#"{"sku": "abc-12"}"#, &[]);
    let other = Input::parse("user.created", r#"{"sku": "ABC-12"}"#, &[]);
    for _ in 0..1_000 {
        assert!(f.eval(&yes).matched());
        assert!(!f.eval(&no).matched());
        assert!(!f.eval(&other).matched());
    }
    // Evaluated beside another filter, each sees its own patterns.
    let g = compile(r#"data.sku.matches('^abc')"#).unwrap();
    let v = verdicts(&no, &[Some(&f), Some(&g)]);
    assert!(!v[0].matched() && v[1].matched());
}
