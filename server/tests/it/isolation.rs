//! Tenant isolation, second round: paths along which one tenant could slow, stop or
//! fill what others depend on. Each test drives the real app (API, dispatcher, a real
//! PostgreSQL) the way a hostile tenant would.

use crate::common;
use app::core::{EndpointId, ProjectId};

use std::time::Duration;

use app::{auth::system_access, delivery_filter::DeliveryFilter, use_cases};
use common::{Answer, Receiver, TestApp};
use serde_json::{json, Value};

async fn post(app: &TestApp, key: &str, path: &str, body: Value) -> (u16, Value) {
    app.api(key, reqwest::Method::POST, path, body).await
}

async fn business(app: &TestApp) -> (i64, String) {
    app.project("business").await
}

async fn parked(app: &TestApp, id: i64) -> Option<bool> {
    sqlx::query_scalar("SELECT parked FROM delivery_queue WHERE id = $1")
        .bind(id)
        .fetch_optional(&app.pool)
        .await
        .unwrap()
}

async fn disable(app: &TestApp, project_id: i64, endpoint_id: i64) {
    use_cases::endpoints::change(
        &app.pool,
        &system_access(ProjectId::new(project_id), "test"),
        EndpointId::new(endpoint_id),
        use_cases::endpoints::EndpointChange {
            enabled: Some(false),
            ..Default::default()
        },
    )
    .await
    .unwrap();
}

/// Finding 1: a Retry, a bulk replay or a plain SQL insert made rows for a disabled
/// endpoint that were not parked, so every claim filtered them row by row.
#[tokio::test]
async fn rows_for_a_disabled_endpoint_are_parked_whatever_makes_them() {
    let app = TestApp::spawn().await;
    let (project, key) = business(&app).await;
    let rx = Receiver::start().await;
    let (endpoint, _) = app.endpoint(project, &rx.url).await;
    let event = app.ingest(project, "order.paid", json!({"n": 1})).await;
    app.settled(&event, Duration::from_secs(10)).await;
    let first: i64 = sqlx::query_scalar("SELECT id FROM deliveries WHERE event_id = $1")
        .bind(&event)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    disable(&app, project, endpoint).await;

    // Retry through the public API.
    let (status, body) = post(&app, &key, &format!("/deliveries/{first}/retry"), json!({})).await;
    assert_eq!(status, 202, "{body}");
    let retried = body["id"].as_i64().unwrap();
    assert_eq!(
        parked(&app, retried).await,
        Some(true),
        "a Retry's row is parked"
    );

    // A plain INSERT through the view, as a tool or a fixture would write it.
    let plain: i64 = sqlx::query_scalar(
        "INSERT INTO deliveries (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                 trigger, status, request_id)
         VALUES ($1, $2, 'order.paid', $3, $4, 9, 'auto', 'pending', 'req_plainsqlinsert0000000000')
         RETURNING id",
    )
    .bind(project)
    .bind(&event)
    .bind(endpoint)
    .bind(&rx.url)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        parked(&app, plain).await,
        Some(true),
        "a plain INSERT is parked"
    );

    // Finish the Retry's row so a replay may take the pair, then replay the view.
    sqlx::query("DELETE FROM deliveries WHERE id = ANY($1)")
        .bind(vec![retried, plain])
        .execute(&app.pool)
        .await
        .unwrap();
    let access = system_access(ProjectId::new(project), "test");
    let filter = DeliveryFilter {
        endpoint: Some(EndpointId::new(endpoint)),
        ..Default::default()
    };
    let replay = use_cases::replays::start(&app.pool, &app_config(&app), &access, &filter)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let replayed: Vec<(i64, bool)> = loop {
        let rows: Vec<(i64, bool)> = sqlx::query_as(
            "SELECT q.id, q.parked FROM replay_items ri JOIN delivery_queue q ON q.id = ri.delivery_id
              WHERE ri.replay_id = $1",
        )
        .bind(replay.id)
        .fetch_all(&app.pool)
        .await
        .unwrap();
        if !rows.is_empty() || tokio::time::Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(replayed.len(), 1, "the replay queued its pair");
    assert!(
        replayed.iter().all(|r| r.1),
        "a replay's rows are parked: {replayed:?}"
    );

    // None of them went out; enabling the endpoint sends them.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        rx.seen().len(),
        1,
        "nothing was sent to the disabled endpoint"
    );
    use_cases::endpoints::change(
        &app.pool,
        &access,
        EndpointId::new(endpoint),
        use_cases::endpoints::EndpointChange {
            enabled: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(rx.wait_for(2, Duration::from_secs(10)).await.len(), 2);
    app.stop().await;
}

fn app_config(app: &TestApp) -> app::cfg::Config {
    common::test_config(&app.db_url)
}

/// Finding 1, related: the follow-up of an attempt in flight when its endpoint was
/// deleted was queued `pending`, never claimed nor dead-lettered, and kept its event
/// from retention.
#[tokio::test]
async fn the_follow_up_of_an_attempt_in_flight_when_its_endpoint_is_deleted_is_a_dead_letter() {
    let app = TestApp::spawn().await;
    let (project, _) = business(&app).await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(500).delay(Duration::from_millis(1200)));
    let (endpoint, _) = app.endpoint(project, &rx.url).await;
    let event = app.ingest(project, "order.paid", json!({"n": 1})).await;
    assert_eq!(rx.wait_for(1, Duration::from_secs(5)).await.len(), 1);
    use_cases::endpoints::delete(
        &app.pool,
        &system_access(ProjectId::new(project), "test"),
        EndpointId::new(endpoint),
    )
    .await
    .unwrap();
    let attempts = app.settled(&event, Duration::from_secs(10)).await;
    let last = attempts.last().unwrap();
    assert_eq!(
        (last.1.as_str(), last.3.as_deref()),
        ("dead_letter", Some("endpoint_deleted")),
        "{attempts:?}"
    );
    let waiting: i64 =
        sqlx::query_scalar("SELECT count(*) FROM delivery_queue WHERE event_id = $1")
            .bind(&event)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(waiting, 0, "nothing of the event waits in the queue");
    app.stop().await;
}

/// The limits of SPEC "Limits", with the operator's overrides, answered `422
/// limit_reached` through the API and from the use cases the dashboard calls.
#[tokio::test]
async fn every_limit_answers_limit_reached_and_frees_up_when_used_less() {
    let app = TestApp::spawn().await;
    let (project, key) = business(&app).await;
    sqlx::query(
        "UPDATE projects SET limits = '{\"endpoints\": 2, \"event_types_per_endpoint\": 2,
            \"api_keys\": 2, \"members\": 2, \"concurrent_replays\": 1}' WHERE id = $1",
    )
    .bind(project)
    .execute(&app.pool)
    .await
    .unwrap();
    let rx = Receiver::start().await;
    let hook = |events: Value| json!({"url": rx.url, "events": events});
    let (s, first) = post(&app, &key, "/webhooks", hook(json!(["a.b", "c.d"]))).await;
    assert_eq!(s, 201, "{first}");
    let (s, body) = post(&app, &key, "/webhooks", hook(json!(["a.b", "c.d", "e.f"]))).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (422, Some("limit_reached")),
        "{body}"
    );
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("event_types_per_endpoint"));
    let (s, _) = post(&app, &key, "/webhooks", hook(json!(["*"]))).await;
    assert_eq!(s, 201);
    let (s, body) = post(&app, &key, "/webhooks", hook(json!(["*"]))).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (422, Some("limit_reached")),
        "{body}"
    );
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("endpoints"));
    // A deleted endpoint frees its place.
    let gone = reqwest::Client::new()
        .delete(format!(
            "{}/public/v1/webhooks/{}",
            app.base,
            first["id"].as_i64().unwrap()
        ))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert!(gone.status().is_success());
    let (s, _) = post(&app, &key, "/webhooks", hook(json!(["*"]))).await;
    assert_eq!(s, 201);

    let access = system_access(ProjectId::new(project), "test");
    // The harness made one key already.
    use_cases::keys::create(&app.pool, &access, "second")
        .await
        .unwrap();
    let refused = use_cases::keys::create(&app.pool, &access, "third")
        .await
        .unwrap_err();
    assert!(
        matches!(refused, app::error::AppError::LimitReached(_)),
        "{refused}"
    );
    assert_eq!(refused.status(), 422);

    // The owner is one member; an open invitation is another.
    let owner = owner_access(&app, project).await;
    use_cases::team::invite(&app.pool, &owner, "one@example.com")
        .await
        .unwrap();
    let refused = use_cases::team::invite(&app.pool, &owner, "two@example.com")
        .await
        .unwrap_err();
    assert!(
        matches!(refused, app::error::AppError::LimitReached(_)),
        "{refused}"
    );

    // One replay at a time here.
    let event = app.ingest(project, "order.paid", json!({})).await;
    app.settled(&event, Duration::from_secs(10)).await;
    let cfg = app_config(&app);
    let filter = DeliveryFilter::default();
    let mut tx = app.pool.begin().await.unwrap();
    // Held running: the replay must not finish before the second is asked for.
    sqlx::query("INSERT INTO replays (project_id, created_by, filter, per_second) VALUES ($1, 'x', '{}', 1)")
        .bind(project)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let refused = use_cases::replays::start(&app.pool, &cfg, &access, &filter)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, app::error::AppError::LimitReached(_)),
        "{refused}"
    );
    app.stop().await;
}

async fn owner_access(app: &TestApp, project: i64) -> app::auth::Access {
    let mut a = system_access(ProjectId::new(project), "owner");
    a.user_id = sqlx::query_scalar("SELECT user_id FROM memberships WHERE project_id = $1")
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    a
}
