//! Recovery through the public API: an endpoint's attempts still failing in a window are
//! replayed once each through bulk replay, followed to the end, and nothing else is.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use reqwest::Method;
use serde_json::{json, Value};

async fn dead_letters(app: &TestApp, endpoint: i64) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM delivery_log WHERE endpoint_id = $1 AND status = 'dead_letter'",
    )
    .bind(endpoint)
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

async fn until_done(app: &TestApp, key: &str, id: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, replay) = app
            .api(key, Method::GET, &format!("/replays/{id}"), Value::Null)
            .await;
        assert_eq!(s, 200, "{replay}");
        if replay["status"] == "done" && replay["finished"] == replay["total"] {
            return replay;
        }
        assert!(Instant::now() < deadline, "{replay}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn recover_replays_the_failures_of_one_endpoint_once_and_nothing_else() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("business").await;
    let failing = Receiver::start().await;
    failing.set_default(Answer::status(500));
    let healthy = Receiver::start().await;
    let (broken, _) = app.endpoint(project, &failing.url).await;
    let (fine, _) = app.endpoint(project, &healthy.url).await;
    let since = chrono::Utc::now() - chrono::Duration::minutes(5);
    for n in 0..3 {
        let (s, _) = app
            .api(
                &key,
                Method::POST,
                "/events",
                json!({"event": "order.paid", "data": {"n": n}}),
            )
            .await;
        assert!(s < 300);
    }
    // Four attempts 200 ms apart each, then dead letters.
    let deadline = Instant::now() + Duration::from_secs(20);
    while dead_letters(&app, broken).await < 3 {
        assert!(Instant::now() < deadline, "the failures never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    healthy.wait_for(3, Duration::from_secs(10)).await;
    let failed_before = failing.seen().len();

    failing.set_default(Answer::status(200));
    let body = json!({"since": since.to_rfc3339()});
    let (s, replay) = app
        .api(
            &key,
            Method::POST,
            &format!("/webhooks/{broken}/recover"),
            body.clone(),
        )
        .await;
    assert_eq!(s, 202, "{replay}");
    assert_eq!(replay["total"], 3, "{replay}");
    let id = replay["id"].as_i64().unwrap();
    let done = until_done(&app, &key, id).await;
    assert_eq!(done["finished"], 3);
    failing
        .wait_for(failed_before + 3, Duration::from_secs(10))
        .await;
    let replayed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM delivery_log WHERE endpoint_id = $1 AND trigger = 'manual_retry' AND status = 'succeeded'",
    )
    .bind(broken)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(replayed, 3);
    assert_eq!(
        healthy.seen().len(),
        3,
        "the healthy endpoint got nothing again"
    );

    // Recovered pairs are not failing any more: a second recovery is empty, and ends.
    let (s, again) = app
        .api(
            &key,
            Method::POST,
            &format!("/webhooks/{broken}/recover"),
            body.clone(),
        )
        .await;
    assert_eq!((s, again["total"].as_i64()), (202, Some(0)), "{again}");
    until_done(&app, &key, again["id"].as_i64().unwrap()).await;
    let (s, _) = app
        .api(
            &key,
            Method::POST,
            &format!("/webhooks/{fine}/recover"),
            body.clone(),
        )
        .await;
    assert_eq!(s, 202);

    // An empty window recovers nothing; bad bodies, another project's endpoint and replay.
    let empty = json!({"since": since.to_rfc3339(), "until": (since - chrono::Duration::minutes(1)).to_rfc3339()});
    let (s, none) = app
        .api(
            &key,
            Method::POST,
            &format!("/webhooks/{broken}/recover"),
            empty,
        )
        .await;
    assert_eq!((s, none["total"].as_i64()), (202, Some(0)), "{none}");
    for bad in [
        json!({"since": "yesterday"}),
        json!({"until": since.to_rfc3339()}),
        json!({"since": since.to_rfc3339(), "extra": 1}),
    ] {
        let (s, answer) = app
            .api(
                &key,
                Method::POST,
                &format!("/webhooks/{broken}/recover"),
                bad.clone(),
            )
            .await;
        assert_eq!(s, 422, "{bad}: {answer}");
    }
    let (_, other_key) = app.project("business").await;
    let (s, _) = app
        .api(
            &other_key,
            Method::POST,
            &format!("/webhooks/{broken}/recover"),
            body,
        )
        .await;
    assert_eq!(s, 404);
    for (m, path) in [
        (Method::GET, format!("/replays/{id}")),
        (Method::POST, format!("/replays/{id}/cancel")),
    ] {
        let (s, _) = app.api(&other_key, m, &path, Value::Null).await;
        assert_eq!(s, 404, "{path}");
    }
    // Cancelling a finished replay leaves it as it is.
    let (s, cancelled) = app
        .api(
            &key,
            Method::POST,
            &format!("/replays/{id}/cancel"),
            Value::Null,
        )
        .await;
    assert_eq!((s, cancelled["status"].as_str()), (200, Some("done")));
    app.stop().await;
}
