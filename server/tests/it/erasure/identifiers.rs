//! What erasure and project deletion leave of a tenant's identifiers: ordering keys go
//! with the event's data, idempotency keys are kept only as keyed hashes (old ones
//! converted, replays still recognised), and a deleted project's Redirect copies leave
//! the inspector's bins at once.

use super::*;
use app::core::{AttemptId, ProjectId};

#[tokio::test]
async fn erasure_clears_ordering_keys_and_idempotency_keys_are_kept_hashed() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("business").await;
    let (_, other_key) = app.project("business").await;
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let (ordering, idem) = (format!("ok-user-{tag}"), format!("idem-user-{tag}"));
    let receiver = Receiver::start().await;
    app.endpoint(project, &receiver.url).await;
    let body = json!({"event": "user.updated", "data": {"n": 1}, "subjects": ["user:42"],
        "ordering_key": ordering, "id": idem});
    let (s, first) = app.api(&key, Method::POST, "/events", body.clone()).await;
    assert_eq!(s, 202, "{first}");
    let event = first["id"].as_str().unwrap().to_string();
    app.settled(&event, Duration::from_secs(10)).await;
    let (_, ev) = app
        .api(&key, Method::GET, &format!("/events/{event}"), Value::Null)
        .await;
    assert_eq!(ev["ordering_key"], ordering.as_str(), "{ev}");
    let (s, e) = app
        .api(
            &key,
            Method::POST,
            "/erasures",
            json!({"subject": "user:42"}),
        )
        .await;
    assert_eq!(s, 202, "{e}");
    until_done(&app, &key, e["id"].as_i64().unwrap()).await;
    let (_, ev) = app
        .api(&key, Method::GET, &format!("/events/{event}"), Value::Null)
        .await;
    assert_eq!(ev["ordering_key"], Value::Null, "{ev}");
    let (_, deliveries) = app
        .api(
            &key,
            Method::GET,
            &format!("/deliveries?event_id={event}"),
            Value::Null,
        )
        .await;
    let items = deliveries["data"].as_array().unwrap();
    assert!(!items.is_empty(), "{deliveries}");
    for d in items {
        assert_eq!(d["ordering_key"], Value::Null, "{d}");
    }
    assert_eq!(rows_holding(&app, &ordering).await, vec![]);
    assert_eq!(rows_holding(&app, &idem).await, vec![]);

    // A retry of the request is still recognised: the first answer, nothing sent.
    let (s, again) = app.api(&key, Method::POST, "/events", body.clone()).await;
    assert_eq!(s, 202, "{again}");
    assert_eq!(again["id"], first["id"], "{again}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.seen().len(), 1);
    // The same key in another project is another event, stored under another hash.
    let (_, theirs) = app
        .api(&other_key, Method::POST, "/events", body.clone())
        .await;
    assert_ne!(theirs["id"], first["id"]);
    let hashes: Vec<Option<String>> =
        sqlx::query_scalar("SELECT client_id FROM events WHERE event_id = ANY($1)")
            .bind(vec![
                event.clone(),
                theirs["id"].as_str().unwrap().to_string(),
            ])
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(hashes.len(), 2);
    assert_ne!(hashes[0], hashes[1], "{hashes:?}");

    app.stop().await;
}

/// The migration that hashes idempotency keys.
const HASHING: i64 = 20261206001100;

#[tokio::test]
async fn an_idempotency_key_stored_before_hashing_still_dedupes() {
    // A database as the previous release left it, with an event under a plain key.
    let admin = sqlx::PgPool::connect(&admin_url()).await.unwrap();
    let name = format!("ph_test_{}", ulid::Ulid::new().to_string().to_lowercase());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let mut url = url::Url::parse(&admin_url()).unwrap();
    url.set_path(&format!("/{name}"));
    let url = url.to_string();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let before = sqlx::migrate::Migrator {
        migrations: std::borrow::Cow::Owned(
            app::db::MIGRATOR
                .migrations
                .iter()
                .filter(|m| m.version < HASHING)
                .cloned()
                .collect(),
        ),
        ..sqlx::migrate::Migrator::DEFAULT
    };
    before.run(&pool).await.unwrap();
    let owner = app::db::users::upsert(&pool, "old@example.com", "password-123", "user")
        .await
        .unwrap();
    let project = app::db::projects::create(&pool, "Old", "business", owner.id)
        .await
        .unwrap();
    let (key, _) = app::db::api_keys::create(&pool, project.id, "t")
        .await
        .unwrap();
    let legacy = format!("legacy-{}", ulid::Ulid::new().to_string().to_lowercase());
    sqlx::query(
        "INSERT INTO events (event_id, project_id, event_type, data, client_id, deliveries)
         VALUES ('evt_legacy0000000000000000', $1, 'user.updated', '{}', $2, 0)",
    )
    .bind(project.id)
    .bind(&legacy)
    .execute(&pool)
    .await
    .unwrap();

    app::db::migrate(&pool).await.unwrap();
    server::web::session_store(&pool).migrate().await.unwrap();
    let app = TestApp::spawn_on(TestDb { pool, url }, |_| {}, true).await;
    assert_eq!(rows_holding(&app, &legacy).await, vec![]);
    let (s, again) = app
        .api(
            &key,
            Method::POST,
            "/events",
            json!({"event": "user.updated", "data": {}, "id": legacy}),
        )
        .await;
    assert_eq!(s, 202, "{again}");
    assert_eq!(again["id"], "evt_legacy0000000000000000", "{again}");
    // The header carries the same key.
    let r = reqwest::Client::new()
        .post(format!("{}/public/v1/events", app.base))
        .bearer_auth(&key)
        .header("idempotency-key", &legacy)
        .json(&json!({"event": "user.updated", "data": {}}))
        .send()
        .await
        .unwrap();
    let again: Value = r.json().await.unwrap();
    assert_eq!(again["id"], "evt_legacy0000000000000000", "{again}");
    app.stop().await;
}

/// The inspector's captures of a bin, as its page reads them.
async fn bin_page(app: &TestApp, bin: &str) -> Vec<Value> {
    let r = reqwest::Client::new()
        .post(format!("{}/api/bin_requests", app.base))
        .form(&[("id", bin)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test]
async fn deleting_a_project_takes_its_redirect_copies_out_of_the_bins() {
    let app = TestApp::spawn().await;
    let (project, key) = app.project("business").await;
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let receiver = Receiver::start().await;
    app.endpoint(project, &receiver.url).await;
    let event = send(
        &app,
        &key,
        json!({"email": format!("copy-{tag}")}),
        json!([]),
    )
    .await;
    app.settled(&event, Duration::from_secs(10)).await;
    let attempt: i64 = sqlx::query_scalar("SELECT id FROM delivery_log WHERE event_id = $1")
        .bind(&event)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let access = app::auth::system_access(ProjectId::new(project), "test");
    let mut cfg = test_config(&app.db_url);
    cfg.public_url = app.base.clone();
    let (_, bin) = app::use_cases::deliveries::redirect(
        &app.pool,
        &cfg,
        &access,
        AttemptId::new(attempt),
        None,
    )
    .await
    .unwrap();
    // Someone else's capture in the same bin stays.
    let r = reqwest::Client::new()
        .post(cfg.bin_url(&bin))
        .body(format!("mine-{tag}"))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while bin_page(&app, &bin).await.len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the Redirect never reached its bin"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let operator = app::db::operator_keys::create(&app.pool, "ops")
        .await
        .unwrap();
    let r = reqwest::Client::new()
        .delete(format!("{}/operator/v1/projects/{project}", app.base))
        .bearer_auth(&operator)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let left = bin_page(&app, &bin).await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        !left[0].to_string().contains(&format!("copy-{tag}")),
        "{left:?}"
    );
    // An attempt still in flight when the project went leaves no copy either.
    let late = app::db::bins::capture(
        &app.pool,
        &bin,
        app::db::bins::Captured {
            method: "POST",
            path: "/",
            query: "",
            headers: &[],
            body: format!("copy-{tag}").as_bytes(),
            size: 40,
            status: 200,
            remote_addr: None,
            source: &format!("project:{project}"),
            request_id: Some("req_late"),
        },
        app::db::bins::Quotas {
            per_bin_bytes: 1 << 20,
            total_bytes: 1 << 30,
            per_source_bytes: 1 << 30,
        },
    )
    .await
    .unwrap();
    assert_eq!(late, app::db::bins::Stored::NoSuchBin);
    while app::db::tenants::purge_step(&app.pool, 1000).await.unwrap() > 0 {}
    assert_eq!(rows_holding(&app, &format!("copy-{tag}")).await, vec![]);
    assert_eq!(bin_page(&app, &bin).await.len(), 1);
    app.stop().await;
}
