//! A project's own history window: the operator's `retention_days` below the server's
//! window hides older history from the API at once and trims it in bounded steps, while
//! another project keeps the server's whole window.

use crate::common;

use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};

/// Makes one event with one delivered attempt for the project, and moves both `days`
/// into the past.
async fn history(app: &TestApp, project: i64, key: &str, receiver: &Receiver, days: i32) {
    let (s, body) = app
        .api(
            key,
            Method::POST,
            "/events",
            json!({"event": "order.paid", "data": {"days": days}}),
        )
        .await;
    assert!(s < 300, "{body}");
    let event = body["id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let done: i64 = sqlx::query_scalar("SELECT count(*) FROM delivery_log WHERE event_id = $1")
            .bind(&event)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        if done > 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no attempt for {event}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for table in ["events", "delivery_log"] {
        sqlx::query(&format!(
            "UPDATE {table} SET created_at = created_at - make_interval(days => $1) \
             WHERE event_id = $2 AND project_id = $3"
        ))
        .bind(days)
        .bind(&event)
        .bind(project)
        .execute(&app.pool)
        .await
        .unwrap();
    }
    let _ = receiver;
}

async fn listed(app: &TestApp, key: &str, what: &str) -> usize {
    let (s, body) = app.api(key, Method::GET, what, Value::Null).await;
    assert_eq!(s, 200, "{body}");
    body["data"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_one_day_project_shows_and_keeps_a_day_while_another_keeps_the_servers_window() {
    let app = TestApp::spawn().await;
    app::db::maintenance::ensure_partitions(&app.pool, 5, 1)
        .await
        .unwrap();
    let receiver = Receiver::start().await;
    let (short, short_key) = app.project("business").await;
    let (long, long_key) = app.project("business").await;
    app.endpoint(short, &receiver.url).await;
    app.endpoint(long, &receiver.url).await;
    let operator = app::db::operator_keys::create(&app.pool, "retention")
        .await
        .unwrap();
    let r = reqwest::Client::new()
        .patch(format!("{}/operator/v1/projects/{short}", app.base))
        .bearer_auth(&operator)
        .json(&json!({"limits": {"retention_days": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let project: Value = r.json().await.unwrap();
    assert_eq!(project["limits"]["retention_days"], 1);

    for (p, k) in [(short, &short_key), (long, &long_key)] {
        history(&app, p, k, &receiver, 3).await;
        history(&app, p, k, &receiver, 0).await;
    }
    // The API shows the project's window at once.
    assert_eq!(listed(&app, &short_key, "/events").await, 1);
    assert_eq!(listed(&app, &short_key, "/deliveries").await, 1);
    assert_eq!(listed(&app, &long_key, "/events").await, 2);
    assert_eq!(listed(&app, &long_key, "/deliveries").await, 2);
    let since = (chrono::Utc::now() - chrono::Duration::days(10)).to_rfc3339();
    let (_, body) = app
        .api(
            &short_key,
            Method::GET,
            &format!("/events?since={}", urlencode(&since)),
            Value::Null,
        )
        .await;
    assert_eq!(
        body["data"].as_array().map(Vec::len),
        Some(1),
        "an earlier since does not reach past the window"
    );

    // Nor are the older rows read by id there, while the other project's are.
    for (p, k, status) in [(short, &short_key, 404), (long, &long_key, 200)] {
        let (event, attempt): (String, i64) = sqlx::query_as(
            "SELECT event_id, id FROM delivery_log WHERE project_id = $1 ORDER BY created_at LIMIT 1",
        )
        .bind(p)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        for path in [format!("/events/{event}"), format!("/deliveries/{attempt}")] {
            let (s, body) = app.api(k, Method::GET, &path, Value::Null).await;
            assert_eq!(s, status, "{path}: {body}");
        }
    }

    // Trimming removes the short project's old rows only, in bounded steps.
    let step = app::db::maintenance::trim_short_windows(&app.pool, 14, 5000)
        .await
        .unwrap();
    assert_eq!(step, (1, 1));
    let again = app::db::maintenance::trim_short_windows(&app.pool, 14, 5000)
        .await
        .unwrap();
    assert_eq!(again, (0, 0));
    let count = |table: &'static str, p: i64| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(&format!(
                "SELECT count(*) FROM {table} WHERE project_id = $1"
            ))
            .bind(p)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    assert_eq!(
        (
            count("events", short).await,
            count("delivery_log", short).await
        ),
        (1, 1)
    );
    assert_eq!(
        (
            count("events", long).await,
            count("delivery_log", long).await
        ),
        (2, 2)
    );
    app.stop().await;
}

fn urlencode(s: &str) -> String {
    s.replace('+', "%2B").replace(':', "%3A")
}
