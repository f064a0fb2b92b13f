//! Event-type schemas through the public API: set, read, replaced and removed; events
//! whose `data` fails the type's schema refused with the path and the rule, alone and in
//! a batch (which is then stored not at all); schemas that would fetch, or are too large,
//! refused; another project neither sees nor is checked by them; 200 per project.

use crate::common;

use common::TestApp;
use serde_json::{json, Value};

const ORDER: &str = r##"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["amount", "email"],
  "properties": {
    "amount": {"type": "integer", "minimum": 1},
    "email": {"type": "string", "format": "email"},
    "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}}
  },
  "$defs": {"line": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"}}}}
}"##;

async fn put_schema(app: &TestApp, key: &str, t: &str, body: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .put(format!("{}/public/v1/event-types/{t}/schema", app.base))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn send(app: &TestApp, key: &str, data: Value) -> (u16, Value) {
    app.api(
        key,
        reqwest::Method::POST,
        "/events",
        json!({"event": "order.paid", "data": data}),
    )
    .await
}

/// The status of a call on `order.paid`'s schema without a body.
async fn order_schema(app: &TestApp, key: &str, method: reqwest::Method) -> u16 {
    let path = "/event-types/order.paid/schema";
    app.api(key, method, path, Value::Null).await.0
}

async fn stored_events(app: &TestApp, project_id: i64) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM events WHERE project_id = $1")
        .bind(project_id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

fn message(body: &Value) -> String {
    body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_schema_checks_the_events_of_its_type() {
    let app = TestApp::spawn().await;
    let (project_id, key) = app.project("business").await;
    let (_, other_key) = app.project("business").await;

    // Before any schema, anything goes.
    assert_eq!(send(&app, &key, json!({"amount": 0})).await.0, 202);

    let (status, set) = put_schema(&app, &key, "order.paid", ORDER).await;
    assert_eq!(status, 201, "{set}");
    assert_eq!(set["version"], 1);
    assert_eq!(set["event"], "order.paid");
    let r = reqwest::Client::new()
        .get(format!(
            "{}/public/v1/event-types/order.paid/schema",
            app.base
        ))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["posthorn-schema-version"], "1");
    let got: Value = r.json().await.unwrap();
    assert_eq!(got, serde_json::from_str::<Value>(ORDER).unwrap());

    // Valid: accepted. Invalid: 422 naming the path and the rule.
    let (status, body) = send(&app, &key, json!({"amount": 5, "email": "a@example.com"})).await;
    assert_eq!(status, 202, "{body}");
    for (data, path, rule) in [
        (
            json!({"amount": 0, "email": "a@example.com"}),
            "data.amount",
            "minimum",
        ),
        (json!({"amount": 5}), "data", "required"),
        (
            json!({"amount": 5, "email": "nope"}),
            "data.email",
            "format",
        ),
        (
            json!({"amount": 5, "email": "a@example.com", "lines": [{"sku": "AB-1"}, {"sku": "x"}]}),
            "data.lines[1].sku",
            "pattern",
        ),
    ] {
        let (status, body) = send(&app, &key, data.clone()).await;
        assert_eq!(status, 422, "{data}: {body}");
        assert_eq!(body["error"]["code"], "invalid");
        let m = message(&body);
        assert!(m.starts_with(&format!("{path}: ")), "{m}");
        assert!(m.contains(&format!("rule `{rule}`")), "{m}");
    }

    // A batch with one bad event is refused whole, naming the item.
    let before = stored_events(&app, project_id).await;
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::POST,
            "/events/batch",
            json!({"events": [
                {"event": "order.paid", "data": {"amount": 1, "email": "a@example.com"}},
                {"event": "order.paid", "data": {"amount": -1, "email": "a@example.com"}},
            ]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        message(&body).starts_with("events[1].data.amount: "),
        "{body}"
    );
    let after = stored_events(&app, project_id).await;
    assert_eq!(before, after, "nothing of the batch was stored");

    // Another project's events of the same type are not checked, and it cannot see it.
    assert_eq!(send(&app, &other_key, json!({"amount": 0})).await.0, 202);
    let status = order_schema(&app, &other_key, reqwest::Method::GET).await;
    assert_eq!(status, 404);

    // Replaced: the new version applies at once.
    let stricter = ORDER.replace("\"minimum\": 1", "\"minimum\": 100");
    let (status, set) = put_schema(&app, &key, "order.paid", &stricter).await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["version"], 2);
    let (status, body) = send(&app, &key, json!({"amount": 50, "email": "a@example.com"})).await;
    assert_eq!(status, 422, "{body}");

    // Refused schemas: a remote reference, a backtracking pattern, not a schema, too big,
    // a bad type name.
    for (t, body, expected) in [
        (
            "order.paid",
            r#"{"$ref": "http://169.254.169.254/latest/meta-data"}"#.to_string(),
            422,
        ),
        (
            "order.paid",
            r#"{"type": "string", "pattern": "(a+)+\\1"}"#.to_string(),
            422,
        ),
        ("order.paid", r#"{"type": 7}"#.to_string(), 422),
        (
            "order.paid",
            format!(r#"{{"description": "{}"}}"#, "x".repeat(70_000)),
            413,
        ),
        ("Not A Type", "{}".to_string(), 422),
    ] {
        let (status, answer) = put_schema(&app, &key, t, &body).await;
        assert_eq!(
            status,
            expected,
            "{}: {answer}",
            &body[..body.len().min(60)]
        );
    }

    // Removed: events are no longer checked.
    let status = order_schema(&app, &key, reqwest::Method::DELETE).await;
    assert_eq!(status, 204);
    assert_eq!(send(&app, &key, json!({"amount": 0})).await.0, 202);
    let status = order_schema(&app, &key, reqwest::Method::DELETE).await;
    assert_eq!(status, 404);

    // At most 200 per project.
    for i in 0..200 {
        let (status, body) = put_schema(&app, &key, &format!("t.n{i}"), "{}").await;
        assert_eq!(status, 201, "{i}: {body}");
    }
    let (status, body) = put_schema(&app, &key, "t.n200", "{}").await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "limit_reached");
    // Replacing one of them is still allowed.
    assert_eq!(
        put_schema(&app, &key, "t.n5", r#"{"type": "object"}"#)
            .await
            .0,
        200
    );
    app.stop().await;
}

/// A schema whose 30 levels each refer twice to the next by `$anchor` name: 2^30 checks
/// per event if accepted.
fn anchor_doubling() -> String {
    let mut defs = serde_json::Map::new();
    for i in 0..30 {
        let next = format!("#a{}", i + 1);
        defs.insert(
            format!("a{i}"),
            json!({"$anchor": format!("a{i}"), "allOf": [{"$ref": next}, {"$ref": next, "minimum": 0}]}),
        );
    }
    defs.insert("a30".into(), json!({"$anchor": "a30", "type": "integer"}));
    json!({"$ref": "#a0", "$defs": defs}).to_string()
}

#[tokio::test]
async fn costly_schemas_are_refused_when_set_and_costly_events_before_they_are_checked() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let (other_project, other_key) = app.project("business").await;
    // Refused when set: exponential by anchors, a pattern past its compiled size.
    let (status, body) = put_schema(&app, &key, "order.paid", &anchor_doubling()).await;
    assert_eq!(status, 422, "{body}");
    assert!(message(&body).contains("references expanded"), "{body}");
    let started = std::time::Instant::now();
    let (status, body) = put_schema(&app, &key, "order.paid", r#"{"pattern": "\\w{300}"}"#).await;
    assert_eq!(status, 422, "{body}");
    assert!(message(&body).contains("16 KiB"), "{body}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    // The most terms per item allowed, and an event that would cost past the budget:
    // refused unchecked, at once, while another project's events go through.
    let alternatives: Vec<Value> = (0..990)
        .map(|i| json!({"const": format!("v{i}")}))
        .collect();
    let schema = json!({"type": "object", "properties": {"lines": {"type": "array", "items": {"anyOf": alternatives}}}});
    let (status, body) = put_schema(&app, &key, "order.paid", &schema.to_string()).await;
    assert_eq!(status, 201, "{body}");
    let started = std::time::Instant::now();
    let (status, body) = send(&app, &key, json!({"lines": vec!["v989"; 20_000]})).await;
    assert_eq!(status, 422, "{body}");
    assert!(message(&body).contains("too costly"), "{body}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let (status, body) = send(&app, &key, json!({"lines": vec!["v989"; 100]})).await;
    assert_eq!(status, 202, "{body}");
    let (status, _) = send(&app, &other_key, json!({"lines": vec!["x"; 20_000]})).await;
    assert_eq!(status, 202);
    assert_eq!(stored_events(&app, other_project).await, 1);
    app.stop().await;
}
