//! Endpoint filters through the public API: a filter that does not parse or check is
//! `422` naming where; a matching event is sent, a non-matching one makes no attempt for
//! the filtered endpoint (its `deliveries` count says so, and the event says which
//! endpoint it skipped and why), alone and in a batch; Retry and bulk replay honour the
//! filter as it is now.

use crate::common;
use app::core::{EndpointId, ProjectId};

use std::time::Duration;

use common::{Receiver, TestApp};
use serde_json::{json, Value};

async fn event(app: &TestApp, key: &str, data: Value) -> (String, i64) {
    let (status, body) = app
        .api(
            key,
            reqwest::Method::POST,
            "/events",
            json!({"event": "payment.succeeded", "data": data}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    (
        body["id"].as_str().unwrap().to_string(),
        body["deliveries"].as_i64().unwrap(),
    )
}

async fn get_event(app: &TestApp, key: &str, id: &str) -> Value {
    let (status, body) = app
        .api(
            key,
            reqwest::Method::GET,
            &format!("/events/{id}"),
            Value::Null,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

fn amounts(rx: &Receiver) -> Vec<i64> {
    let mut seen: Vec<i64> = rx
        .seen()
        .iter()
        .map(|r| {
            serde_json::from_slice::<Value>(&r.body).unwrap()["data"]["amount"]
                .as_f64()
                .map_or(-1, |a| a as i64)
        })
        .collect();
    seen.sort_unstable();
    seen
}

#[tokio::test]
async fn filters_decide_which_endpoint_gets_an_event() {
    let app = TestApp::spawn().await;
    let (project_id, key) = app.project("business").await;
    let (filtered_rx, plain_rx) = (Receiver::start().await, Receiver::start().await);

    // Refused when saved, with the position of what is wrong.
    for (filter, says) in [
        ("data.amount >", "at 1:14"),
        ("dat.amount > 1", "undeclared reference to 'dat'"),
        ("data.items.exists(i, i > data.min)", "inside a loop"),
    ] {
        let (status, body) = app
            .api(
                &key,
                reqwest::Method::POST,
                "/webhooks",
                json!({"url": filtered_rx.url, "events": ["payment.succeeded"], "filter": filter}),
            )
            .await;
        assert_eq!(status, 422, "{filter}: {body}");
        assert!(body.to_string().contains(says), "{filter}: {body}");
    }

    let filter = "data.amount > 1000 && data.region == \"eu\"";
    let (status, ep) = app
        .api(
            &key,
            reqwest::Method::POST,
            "/webhooks",
            json!({"url": filtered_rx.url, "events": ["payment.succeeded"], "filter": filter}),
        )
        .await;
    assert_eq!(status, 201, "{ep}");
    assert_eq!(ep["filter"], filter);
    let filtered_id = ep["id"].as_i64().unwrap();
    let (status, plain) = app
        .api(
            &key,
            reqwest::Method::POST,
            "/webhooks",
            json!({"url": plain_rx.url, "events": ["*"]}),
        )
        .await;
    assert_eq!(status, 201, "{plain}");
    assert_eq!(plain["filter"], Value::Null);

    // A match goes to both; a double amount compares with the int literal.
    let (matched, n) = event(&app, &key, json!({"amount": 1500.5, "region": "eu"})).await;
    assert_eq!(n, 2);
    // Too small: the filtered endpoint gets no attempt, and the event says why.
    let (small, n) = event(&app, &key, json!({"amount": 500, "region": "eu"})).await;
    assert_eq!(n, 1, "only the endpoint without a filter");
    let got = get_event(&app, &key, &small).await;
    assert_eq!(got["deliveries"], 1);
    assert_eq!(
        got["filtered_out"],
        json!([{"endpoint_id": filtered_id, "reason": "the filter was false"}])
    );
    assert_eq!(
        get_event(&app, &key, &matched).await["filtered_out"],
        json!([])
    );
    // No amount at all: the filter fails on it, which sends nothing and says so.
    let (missing, n) = event(&app, &key, json!({"region": "eu"})).await;
    assert_eq!(n, 1);
    let reason = get_event(&app, &key, &missing).await["filtered_out"][0]["reason"].clone();
    assert!(reason.as_str().unwrap().contains("amount"), "{reason}");

    // A batch is filtered event by event.
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::POST,
            "/events/batch",
            json!({"events": [
                {"event": "payment.succeeded", "data": {"amount": 2000, "region": "eu"}},
                {"event": "payment.succeeded", "data": {"amount": 3000, "region": "us"}},
            ]}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let counts: Vec<i64> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["deliveries"].as_i64().unwrap())
        .collect();
    assert_eq!(counts, vec![2, 1]);

    plain_rx.wait_for(5, Duration::from_secs(15)).await;
    filtered_rx.wait_for(2, Duration::from_secs(15)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(amounts(&filtered_rx), vec![1500, 2000]);
    assert_eq!(plain_rx.seen().len(), 5);

    // Retry honours the filter as it is now: after narrowing it, the first event is not
    // sent again to the filtered endpoint (409, saying why); Redirect still works.
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::PATCH,
            &format!("/webhooks/{filtered_id}"),
            json!({"filter": "data.amount >= 2000"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let first: i64 =
        sqlx::query_scalar("SELECT id FROM deliveries WHERE event_id = $1 AND endpoint_id = $2")
            .bind(&matched)
            .bind(filtered_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::POST,
            &format!("/deliveries/{first}/retry"),
            json!({}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("filter"), "{body}");

    // Bulk replay of everything the filtered endpoint got: only what passes now.
    let access = app::auth::system_access(ProjectId::new(project_id), "test");
    let cfg = common::test_config(&app.db_url);
    let replay = app::use_cases::replays::start(
        &app.pool,
        &cfg,
        &access,
        &app::server_fns::deliveries::DeliveryFilter {
            endpoint: Some(EndpointId::new(filtered_id)),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(replay.total, 2, "both attempts were in the view");
    filtered_rx.wait_for(3, Duration::from_secs(15)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(amounts(&filtered_rx), vec![1500, 2000, 2000]);

    // Null removes the filter: every event of its types again.
    let (status, body) = app
        .api(
            &key,
            reqwest::Method::PATCH,
            &format!("/webhooks/{filtered_id}"),
            json!({"filter": null}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["filter"], Value::Null);
    let (_, n) = event(&app, &key, json!({"amount": 1})).await;
    assert_eq!(n, 2);
    app.stop().await;
}
