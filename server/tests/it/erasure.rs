//! Erasure by data subject and by event, through the public API against a real server,
//! real receivers and a real inspector bin: afterwards no byte of the subject's payloads
//! or of the answers to them is readable through the API, the dashboard's detail, the
//! bin's copy, or a `SELECT` over every table; waiting attempts end `erased` unsent.

use crate::common;
use app::core::{AttemptId, ProjectId};

use std::time::{Duration, Instant};

use common::*;
use reqwest::Method;
use serde_json::{json, Value};

#[path = "erasure/identifiers.rs"]
mod identifiers;

async fn until_done(app: &TestApp, key: &str, id: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (s, e) = app
            .api(key, Method::GET, &format!("/erasures/{id}"), Value::Null)
            .await;
        assert_eq!(s, 200, "{e}");
        if e["status"] == "done" {
            return e;
        }
        assert!(Instant::now() < deadline, "the erasure did not finish: {e}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Rows of every table of the schema (partitions included) whose text holds `needle`,
/// as text or as the hex of a `bytea`: (table, rows).
async fn rows_holding(app: &TestApp, needle: &str) -> Vec<(String, i64)> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(tables.len() > 20, "{tables:?}");
    let hex: String = needle.bytes().map(|b| format!("{b:02x}")).collect();
    let mut found = Vec::new();
    for t in tables {
        // ONLY: a partitioned table is counted through its partitions, once each.
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM ONLY \"{t}\" x WHERE x::text LIKE '%' || $1 || '%' OR x::text LIKE '%' || $2 || '%'"
        ))
        .bind(needle)
        .bind(&hex)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if n > 0 {
            found.push((t, n));
        }
    }
    found
}

async fn send(app: &TestApp, key: &str, data: Value, subjects: Value) -> String {
    let (s, r) = app
        .api(
            key,
            Method::POST,
            "/events",
            json!({"event": "user.updated", "data": data, "subjects": subjects}),
        )
        .await;
    assert_eq!(s, 202, "{r}");
    r["id"].as_str().unwrap().to_string()
}

fn answering(body: &str) -> Answer {
    Answer {
        status: 200,
        headers: vec![("x-echo", body.to_string())],
        delay: Duration::ZERO,
        body: body.to_string(),
    }
}

#[tokio::test]
async fn erasing_a_subject_leaves_no_byte_of_its_data_anywhere_and_sends_nothing_waiting() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("business").await;
    let (other_project, other_key) = app.project("business").await;
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let (gone, kept, theirs) = (
        format!("gone-{tag}"),
        format!("kept-{tag}"),
        format!("theirs-{tag}"),
    );
    // The receiver echoes a marker in its answer's body and headers.
    let receiver = Receiver::start().await;
    receiver.set_default(answering(&format!("answer-{tag}")));
    let held = Receiver::start().await;
    // A receiver that asks for the next attempt in an hour: that attempt waits.
    held.set_default(Answer {
        status: 429,
        headers: vec![("retry-after", "3600".into())],
        delay: Duration::ZERO,
        body: format!("held-{tag}"),
    });
    let (_live, _) = app.endpoint(project, &receiver.url).await;
    let (parked, _) = app.endpoint(project, &held.url).await;
    app.endpoint(other_project, &receiver.url).await;

    let mut erased = Vec::new();
    for n in 0..3 {
        erased.push(
            send(
                &app,
                &key,
                json!({"n": n, "email": gone}),
                json!(["user:42"]),
            )
            .await,
        );
    }
    let (s, batch) = app
        .api(
            &key,
            Method::POST,
            "/events/batch",
            json!({"events": [
                {"event": "user.updated", "data": {"note": gone}, "subjects": ["team:1", "user:42"]},
                {"event": "user.updated", "data": {"note": kept}, "subjects": ["user:7"]},
            ]}),
        )
        .await;
    assert_eq!(s, 202, "{batch}");
    erased.push(batch["data"][0]["id"].as_str().unwrap().to_string());
    let other = batch["data"][1]["id"].as_str().unwrap().to_string();
    let foreign = send(
        &app,
        &other_key,
        json!({"email": theirs}),
        json!(["user:42"]),
    )
    .await;
    // Each of the project's five events reached the live endpoint, the other project's too.
    receiver.wait_for(6, Duration::from_secs(10)).await;
    held.wait_for(5, Duration::from_secs(10)).await;
    let all: Vec<String> = erased.iter().chain([&other, &foreign]).cloned().collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sqlx::query_scalar::<_, i64>(
        "SELECT count(DISTINCT event_id) FROM delivery_log WHERE status = 'succeeded' AND event_id = ANY($1)",
    )
    .bind(&all)
    .fetch_one(&app.pool)
    .await
    .unwrap()
        < all.len() as i64
    {
        assert!(Instant::now() < deadline, "not every event was delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, ev) = app
        .api(
            &key,
            Method::GET,
            &format!("/events/{}", erased[3]),
            Value::Null,
        )
        .await;
    assert_eq!(ev["subjects"], json!(["team:1", "user:42"]), "{ev}");

    // A Redirect of one erased event's attempt to an inspector bin: its copy holds the payload.
    let access = app::auth::system_access(ProjectId::new(project), "test");
    let mut cfg = test_config(&app.db_url);
    cfg.public_url = app.base.clone();
    let first: i64 = sqlx::query_scalar(
        "SELECT id FROM delivery_log WHERE event_id = $1 AND status = 'succeeded'",
    )
    .bind(&erased[0])
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let (_, bin) =
        app::use_cases::deliveries::redirect(&app.pool, &cfg, &access, AttemptId::new(first), None)
            .await
            .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while sqlx::query_scalar::<_, i64>(
        "SELECT count(*) FROM bin_requests WHERE bin_id = $1 AND request_id IS NOT NULL",
    )
    .bind(&bin)
    .fetch_one(&app.pool)
    .await
    .unwrap()
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the Redirect never reached its bin"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!rows_holding(&app, &gone).await.is_empty());
    assert!(!rows_holding(&app, &format!("answer-{tag}"))
        .await
        .is_empty());

    let (s, e) = app
        .api(
            &key,
            Method::POST,
            "/erasures",
            json!({"subject": "user:42"}),
        )
        .await;
    assert_eq!(s, 202, "{e}");
    assert!(e["status"] == "running" || e["status"] == "done", "{e}");
    let id = e["id"].as_i64().unwrap();
    // Another project neither sees the erasure nor loses its own event with that subject.
    let (s, _) = app
        .api(
            &other_key,
            Method::GET,
            &format!("/erasures/{id}"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 404);
    let done = until_done(&app, &key, id).await;
    assert_eq!(done["events"], 4, "{done}");
    // The held endpoint's four second attempts were waiting: dead letters now.
    assert_eq!(done["dead_lettered"], 4, "{done}");
    assert_eq!(done["inspector_copies"], 1, "{done}");
    assert_eq!(done["subject"], "user:42");

    // Nothing of the subject's payloads, in any table, as text or bytes; nor the
    // signatures over them, which the endpoint's secret would let one check a guess with.
    assert_eq!(rows_holding(&app, &gone).await, vec![]);
    let signed = receiver
        .seen()
        .into_iter()
        .find(|r| header(r, "webhook-id") == erased[0])
        .expect("the first event was delivered");
    let signature = header(&signed, "webhook-signature")
        .trim_start_matches("v1,")
        .to_string();
    assert_eq!(rows_holding(&app, &signature).await, vec![]);
    // The answers to them are gone; those to the other events stay (so the check can see).
    let answers = rows_holding(&app, &format!("answer-{tag}")).await;
    let answered: i64 = answers.iter().map(|(_, n)| n).sum();
    assert_eq!(
        answered, 2,
        "only the two kept events' answers: {answers:?}"
    );
    let held_answers = rows_holding(&app, &format!("held-{tag}")).await;
    assert_eq!(
        held_answers.iter().map(|(_, n)| n).sum::<i64>(),
        1,
        "{held_answers:?}"
    );
    assert_eq!(rows_holding(&app, &kept).await.len(), 1);
    assert_eq!(rows_holding(&app, &theirs).await.len(), 1);

    // Through the API: the event says it was erased, and by which erasure.
    for event in &erased {
        let (s, ev) = app
            .api(&key, Method::GET, &format!("/events/{event}"), Value::Null)
            .await;
        assert_eq!(s, 200);
        assert_eq!(ev["data"], Value::Null, "{ev}");
        assert_eq!(ev["subjects"], json!([]), "{ev}");
        assert_eq!(ev["erasure_id"], id, "{ev}");
        assert!(ev["erased_at"].is_string(), "{ev}");
    }
    let (_, ev) = app
        .api(
            &other_key,
            Method::GET,
            &format!("/events/{foreign}"),
            Value::Null,
        )
        .await;
    assert_eq!(ev["data"]["email"], theirs.as_str());

    // The dashboard's expanded attempt shows the marker and no payload.
    let detail = app::use_cases::deliveries::detail(&app.pool, &access, AttemptId::new(first))
        .await
        .unwrap();
    assert_eq!(detail.payload, "");
    assert_eq!(detail.response_body, None);
    assert_eq!(detail.response_headers, None);
    assert_eq!(detail.erased.map(|e| e.1), Some(id));

    // Waiting attempts are dead letters of kind `erased`; due now, none is sent.
    let waiting: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT status, error_kind FROM deliveries
          WHERE endpoint_id = $1 AND event_id = ANY($2) AND attempt = 2",
    )
    .bind(parked)
    .bind(&erased)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(waiting.len(), 4);
    assert!(
        waiting
            .iter()
            .all(|(s, k)| s == "dead_letter" && k.as_deref() == Some("erased")),
        "{waiting:?}"
    );
    held.set_default(Answer::status(200));
    sqlx::query("UPDATE delivery_queue SET scheduled_at = now() WHERE endpoint_id = $1")
        .bind(parked)
        .execute(&app.pool)
        .await
        .unwrap();
    // The kept event's second attempt goes out; none of the erased ones does.
    held.wait_for(6, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let seen = held.seen();
    assert_eq!(seen.len(), 6, "an erased event's attempt was sent");
    assert_eq!(header(&seen[5], "webhook-id"), other);

    // Retry, Redirect and recovery of an erased event are refused.
    let (s, r) = app
        .api(
            &key,
            Method::POST,
            &format!("/deliveries/{first}/retry"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 409, "{r}");
    let redirected =
        app::use_cases::deliveries::redirect(&app.pool, &cfg, &access, AttemptId::new(first), None)
            .await;
    assert!(matches!(redirected, Err(app::error::AppError::Conflict(_))));
    let since = (chrono::Utc::now() - chrono::Duration::minutes(5)).to_rfc3339();
    let (s, replay) = app
        .api(
            &key,
            Method::POST,
            &format!("/webhooks/{parked}/recover"),
            json!({"since": since}),
        )
        .await;
    assert_eq!(s, 202, "{replay}");
    assert_eq!(
        replay["total"], 0,
        "erased events are not recovered: {replay}"
    );

    // Events accepted later keep their data.
    let later = send(&app, &key, json!({"email": gone}), json!(["user:42"])).await;
    let (_, ev) = app
        .api(&key, Method::GET, &format!("/events/{later}"), Value::Null)
        .await;
    assert_eq!(ev["data"]["email"], gone.as_str());

    // One event at a time: 204 when done, again 204, another project's event 404.
    let (s, _) = app
        .api(
            &key,
            Method::DELETE,
            &format!("/events/{other}/data"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 204);
    let (_, ev) = app
        .api(&key, Method::GET, &format!("/events/{other}"), Value::Null)
        .await;
    assert_eq!(ev["data"], Value::Null, "{ev}");
    assert_eq!(rows_holding(&app, &kept).await, vec![]);
    let (s, _) = app
        .api(
            &key,
            Method::DELETE,
            &format!("/events/{other}/data"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 204);
    let (s, _) = app
        .api(
            &key,
            Method::DELETE,
            &format!("/events/{foreign}/data"),
            Value::Null,
        )
        .await;
    assert_eq!(s, 404);

    // The audit log says who erased what.
    let audited: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, actor FROM audit_log WHERE project_id = $1 AND action LIKE 'erase%' ORDER BY id",
    )
    .bind(project)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert_eq!(audited[0].0, "erase_subject");
    assert_eq!(audited[1].0, "erase_event");
    app.stop().await;
}

#[tokio::test]
async fn an_attempt_in_flight_during_an_erasure_keeps_no_answer_and_schedules_nothing() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("business").await;
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let receiver = Receiver::start().await;
    // A failure that would be retried, answered slowly, with the marker in its body.
    receiver.set_default(Answer {
        status: 500,
        headers: vec![],
        delay: Duration::from_millis(1500),
        body: format!("slow-{tag}"),
    });
    app.endpoint(project, &receiver.url).await;
    let event = send(
        &app,
        &key,
        json!({"email": format!("mail-{tag}")}),
        json!(["user:9"]),
    )
    .await;
    receiver.wait_for(1, Duration::from_secs(10)).await;
    let (s, e) = app
        .api(
            &key,
            Method::POST,
            "/erasures",
            json!({"subject": "user:9"}),
        )
        .await;
    assert_eq!(s, 202, "{e}");
    let id = e["id"].as_i64().unwrap();
    // Not done while the attempt is out.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, e) = app
        .api(&key, Method::GET, &format!("/erasures/{id}"), Value::Null)
        .await;
    assert_eq!(e["status"], "running", "{e}");
    let done = until_done(&app, &key, id).await;
    assert_eq!(done["events"], 1, "{done}");
    let attempts = app.attempts(&event).await;
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0].1, "dead_letter");
    assert_eq!(attempts[0].2, Some(500));
    assert_eq!(attempts[0].3.as_deref(), Some("erased"));
    let headers: Option<Value> =
        sqlx::query_scalar("SELECT request_headers FROM delivery_log WHERE event_id = $1")
            .bind(&event)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(headers, None);
    // The retry schedule is 200 ms: nothing followed.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(receiver.seen().len(), 1);
    assert_eq!(app.attempts(&event).await.len(), 1);
    assert_eq!(rows_holding(&app, &format!("slow-{tag}")).await, vec![]);
    assert_eq!(rows_holding(&app, &format!("mail-{tag}")).await, vec![]);
    app.stop().await;
}

#[tokio::test]
async fn subjects_are_checked_and_erasures_bounded() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let event =
        |subjects: Value| json!({"event": "user.updated", "data": {}, "subjects": subjects});
    for bad in [
        json!(vec!["a"; 11]),
        json!([""]),
        json!(["x".repeat(256)]),
        json!("user:1"),
        json!([1]),
    ] {
        let (s, r) = app
            .api(&key, Method::POST, "/events", event(bad.clone()))
            .await;
        assert_eq!(s, 422, "{bad} {r}");
    }
    let (s, _) = app
        .api(
            &key,
            Method::POST,
            "/events",
            event(json!(["é".repeat(255)])),
        )
        .await;
    assert_eq!(s, 202);
    let (s, _) = app
        .api(&key, Method::POST, "/erasures", json!({"subject": ""}))
        .await;
    assert_eq!(s, 422);
    let (s, _) = app
        .api(&key, Method::GET, "/erasures/999999999", Value::Null)
        .await;
    assert_eq!(s, 404);
    let (s, _) = app
        .api(&key, Method::DELETE, "/events/evt_nope/data", Value::Null)
        .await;
    assert_eq!(s, 404);
    app.stop().await;
}
