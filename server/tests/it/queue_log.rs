//! An attempt lives in the queue while it waits and in the log once it is finished:
//! claims write no index entries, an outcome moves the row whole, and writes through
//! the `deliveries` view land where their status says, never twice.

use crate::common;
use app::core::ProjectId;

use std::time::Duration;

use common::{TestApp, TestDb};

/// Updates of the queue so far, and how many of them were HOT (no index entry written).
async fn queue_updates(pool: &sqlx::PgPool) -> (i64, i64) {
    sqlx::query_as(
        "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'delivery_queue'",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Asks the connections of `pool` to publish their statistics now.
async fn flush_stats(pool: &sqlx::PgPool) {
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(pool)
        .await
        .unwrap();
    // The flush happens as the connection goes idle after its next statement.
    sqlx::query("SELECT 1").execute(pool).await.unwrap();
}

/// Shares with nothing held yet, roomy enough for every test here.
fn nothing_held() -> app::db::queue::Caps<'static> {
    app::db::queue::Caps {
        per_endpoint: 16,
        per_project: 128,
        endpoints: &[],
        endpoint_held: &[],
        projects: &[],
        project_held: &[],
        throttled_held: false,
        backlogged: false,
        sole_project_room: None,
        pass_over: None,
    }
}

/// A claimed row's outcome: answered 204 in 3 ms, the end of its chain.
fn succeeded(
    row: &app::db::queue::Claimed,
    now: chrono::DateTime<chrono::Utc>,
) -> app::db::queue::Outcome {
    app::db::queue::Outcome {
        id: row.id,
        created_at: row.created_at,
        status: app::core::status::DeliveryStatus::Succeeded,
        started_at: now - chrono::Duration::milliseconds(3),
        finished_at: now,
        duration_ms: 3,
        request_headers: vec![],
        response_status: Some(204),
        response_headers: Some(vec![]),
        response_body: None,
        error_kind: None,
        error: None,
        chain_started_at: now,
        next: None,
    }
}

/// The queue's life of an attempt: inserted, claimed (a HOT update), recorded (moved
/// whole into the log).
#[tokio::test]
async fn claims_write_no_index_entries_and_outcomes_move_rows_to_the_log() {
    use app::db::queue::{self, Outcome};
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (project, _) = app.project("business").await;
    for i in 0..4 {
        app.endpoint(project, &format!("http://127.0.0.1:9/hot{i}"))
            .await;
    }
    let claims = queue::claim_pool(&app.pool);
    let caps = nothing_held();
    for round in 0..5 {
        // 16 events to 4 endpoints: 64 attempts, all claimable at once.
        for i in 0..16 {
            app.ingest(project, "order.paid", serde_json::json!({ "i": i }))
                .await;
        }
        flush_stats(&claims).await;
        let (updates, hot) = queue_updates(&app.pool).await;
        let rows = queue::claim_due(&claims, "probe", 200, Duration::from_secs(30), &caps)
            .await
            .unwrap();
        flush_stats(&claims).await;
        let (updates, hot) = {
            let after = queue_updates(&app.pool).await;
            (after.0 - updates, after.1 - hot)
        };
        println!(
            "round {round}: a claim of {}: {updates} row updates, {hot} of them HOT",
            rows.len()
        );
        assert_eq!((rows.len(), updates), (64, 64));
        // A page without room for the new version cannot take a HOT update; an index
        // on the status would make it none.
        assert!(
            hot * 10 >= updates * 9,
            "{hot} of {updates} updates were HOT"
        );

        let now = chrono::Utc::now();
        let outcomes: Vec<Outcome> = rows
            .iter()
            .map(|r| Outcome {
                request_headers: vec![("webhook-id".into(), r.of.event_id.to_string())],
                ..succeeded(r, now)
            })
            .collect();
        assert_eq!(
            queue::record(&mut app.pool.acquire().await.unwrap(), "probe", &outcomes)
                .await
                .unwrap(),
            64
        );
        let (queued, logged): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM delivery_queue),
                    (SELECT count(*) FROM delivery_log WHERE status = 'succeeded' AND response_status = 204)",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!((queued, logged), (0, 64 * (round + 1)));
    }
    app.stop().await;
}

#[tokio::test]
async fn writes_through_the_view_land_where_the_status_says() {
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (project, _) = app.project("business").await;
    let (endpoint, _) = app.endpoint(project, "http://127.0.0.1:9/view").await;
    let event = app
        .ingest(project, "order.paid", serde_json::json!({}))
        .await;
    let where_is = |id: i64| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_as::<_, (i64, i64)>(
                "SELECT (SELECT count(*) FROM delivery_queue WHERE id = $1),
                        (SELECT count(*) FROM delivery_log WHERE id = $1)",
            )
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    // Inserted through the view: waiting goes to the queue, finished to the log.
    let insert = |status: &'static str| {
        let pool = app.pool.clone();
        let event = event.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "INSERT INTO deliveries (project_id, event_id, event_type, endpoint_id, target_url,
                                         attempt, trigger, status, request_id)
                 VALUES ($1, $2, 'order.paid', $3, 'http://127.0.0.1:9/view', 2, 'auto', $4,
                         'req_view_' || $4)
                 RETURNING id",
            )
            .bind(project)
            .bind(&event)
            .bind(endpoint)
            .bind(status)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let waiting = insert("pending").await;
    let finished = insert("succeeded").await;
    assert_eq!(where_is(waiting).await, (1, 0));
    assert_eq!(where_is(finished).await, (0, 1));

    // Two writers change the same waiting row at once: the first moves it to the log,
    // the second finds it changed and changes nothing (it is not written twice).
    let mut first = app.pool.begin().await.unwrap();
    let n = sqlx::query("UPDATE deliveries SET status = 'failed', error = 'first' WHERE id = $1")
        .bind(waiting)
        .execute(&mut *first)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(n, 1);
    let pool = app.pool.clone();
    let second = tokio::spawn(async move {
        sqlx::query("UPDATE deliveries SET status = 'dead_letter', error = 'second' WHERE id = $1")
            .bind(waiting)
            .execute(&pool)
            .await
            .unwrap()
            .rows_affected()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "the second writer waits for the first"
    );
    first.commit().await.unwrap();
    assert_eq!(second.await.unwrap(), 0);
    assert_eq!(where_is(waiting).await, (0, 1));
    let (status, error): (String, String) =
        sqlx::query_as("SELECT status, error FROM deliveries WHERE id = $1")
            .bind(waiting)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((status.as_str(), error.as_str()), ("failed", "first"));

    // Deleted through the view, from wherever it is.
    let n = sqlx::query("DELETE FROM deliveries WHERE event_id = $1")
        .bind(&event)
        .execute(&app.pool)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(n, 3, "the fan-out's attempt and the two inserted here");
    assert_eq!(where_is(waiting).await, (0, 0));
    app.stop().await;
}

/// Seq scans of the queue so far.
async fn queue_seq_scans(pool: &sqlx::PgPool) -> i64 {
    sqlx::query_scalar("SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'delivery_queue'")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The queue's statistics lag its pages: analysed with one row, then a burst comes and
/// goes before autovacuum does. The writer's connection (the claim's settings) still
/// finds an outcome's row by its key and reads no other page; a seq scan here read the
/// whole burst's dead pages for every outcome.
#[tokio::test]
async fn an_outcome_is_found_by_key_in_a_queue_full_of_dead_rows() {
    use app::db::queue;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (project, _) = app.project("business").await;
    app.endpoint(project, "http://127.0.0.1:9/bloat").await;
    app.ingest(project, "order.paid", serde_json::json!({}))
        .await;
    // The setup reads the queue by seq scans itself: on one connection, whose counts
    // are published before the measurement starts.
    let mut setup = app.pool.acquire().await.unwrap();
    for sql in [
        "ALTER TABLE delivery_queue SET (autovacuum_enabled = false)",
        "ANALYZE delivery_queue",
        "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                     trigger, status, scheduled_at, request_id)
         SELECT project_id, event_id, event_type, endpoint_id, target_url, attempt, trigger, status,
                scheduled_at + interval '1 hour', 'req_burst_' || g
         FROM delivery_queue, generate_series(1, 5000) AS g",
        "DELETE FROM delivery_queue WHERE request_id LIKE 'req_burst_%'",
        "SELECT pg_stat_force_next_flush()",
        "SELECT 1",
    ] {
        sqlx::query(sql).execute(&mut *setup).await.unwrap();
    }
    drop(setup);

    let writer = queue::claim_pool(&app.pool);
    let caps = nothing_held();
    let rows = queue::claim_due(&writer, "probe", 10, Duration::from_secs(30), &caps)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let now = chrono::Utc::now();
    let outcome = succeeded(&rows[0], now);
    flush_stats(&writer).await;
    let before = queue_seq_scans(&app.pool).await;
    assert_eq!(
        queue::record(&mut writer.acquire().await.unwrap(), "probe", &[outcome])
            .await
            .unwrap(),
        1
    );
    flush_stats(&writer).await;
    assert_eq!(
        queue_seq_scans(&app.pool).await - before,
        0,
        "the outcome's row was looked for by a seq scan"
    );
    app.stop().await;
}

/// Lease recovery looks for expired leases among the rows that can be in flight: a held
/// backlog (parked rows, never in flight) is not read, however large. Before, every
/// recovery pass read the whole queue: 68 ms beside 300,000 held rows, every few seconds.
#[tokio::test]
async fn lease_recovery_does_not_read_a_held_backlog() {
    use app::db::queue;
    let db = TestDb::new().await;
    let url = db.url.clone();
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (project, _) = app.project("business").await;
    app.endpoint(project, "http://127.0.0.1:9/held").await;
    app.ingest(project, "order.paid", serde_json::json!({}))
        .await;
    let mut setup = app.pool.acquire().await.unwrap();
    for sql in [
        "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                     trigger, status, scheduled_at, request_id, parked)
         SELECT project_id, event_id, event_type, endpoint_id, target_url, attempt, trigger, status,
                scheduled_at, 'req_held_' || g, true
         FROM delivery_queue, generate_series(1, 20000) AS g",
        // The one row a vanished worker held.
        "UPDATE delivery_queue SET status = 'in_flight', claimed_by = 'gone', started_at = now(),
                lease_expires_at = now() - interval '1 minute'
         WHERE NOT parked",
        "ANALYZE delivery_queue",
        "SELECT pg_stat_force_next_flush()",
        "SELECT 1",
    ] {
        sqlx::query(sql).execute(&mut *setup).await.unwrap();
    }
    drop(setup);
    let held_in_flight: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM delivery_queue WHERE parked AND status = 'in_flight'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(held_in_flight, 0);

    let one = app::db::pool_options(1).connect(&url).await.unwrap();
    flush_stats(&one).await;
    let before = queue_seq_scans(&app.pool).await;
    assert_eq!(queue::recover_expired(&one).await.unwrap(), 1);
    flush_stats(&one).await;
    assert_eq!(
        queue_seq_scans(&app.pool).await - before,
        0,
        "recovery read the queue by a seq scan"
    );
    let pending: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM delivery_queue WHERE NOT parked AND status = 'pending' AND claimed_by IS NULL",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(pending, 1, "the expired row is waiting again");
    // A row in flight is never parked: the database refuses it.
    let refused = sqlx::query(
        "UPDATE delivery_queue SET status = 'in_flight', lease_expires_at = now() WHERE parked",
    )
    .execute(&app.pool)
    .await;
    assert!(refused.is_err(), "a parked row went in flight");
    app.stop().await;
}

/// A claim sized to the room of the project that filled the last one takes no more of
/// that project's rows than its share allows, and still takes another project's rows
/// queued behind them.
#[tokio::test]
async fn a_claim_sized_to_one_projects_room_keeps_the_shares_and_takes_the_others_rows() {
    use app::db::queue;
    let app = TestApp::spawn_on(TestDb::new().await, |_| {}, false).await;
    let (busy, _) = app.project("business").await;
    let (other, _) = app.project("business").await;
    app.endpoint(busy, "http://127.0.0.1:9/busy").await;
    app.endpoint(other, "http://127.0.0.1:9/other").await;
    for i in 0..40 {
        app.ingest(busy, "order.paid", serde_json::json!({ "i": i }))
            .await;
    }
    app.ingest(other, "order.paid", serde_json::json!({})).await;
    let claims = queue::claim_pool(&app.pool);
    // The busy project holds all but 5 of its 128 slots, and filled the last claim.
    let caps = queue::Caps {
        per_endpoint: 64,
        projects: &[ProjectId::new(busy)],
        project_held: &[123],
        sole_project_room: Some(5),
        pass_over: None,
        ..nothing_held()
    };
    let rows = queue::claim_due(&claims, "probe", 200, Duration::from_secs(30), &caps)
        .await
        .unwrap();
    let taken = |p: i64| {
        rows.iter()
            .filter(|r| r.of.project_id == ProjectId::new(p))
            .count()
    };
    assert_eq!((taken(busy), taken(other)), (5, 1));
    app.stop().await;
}

/// While one project's burst fills the oldest due rows and its share never binds (its
/// sends finish fast), oldest-first claims take its rows only and another project's
/// event waits for the whole burst: 16–22 s behind 150,000 attempts in the benchmark.
/// A claim that passes that project over takes the other project's row at once.
#[tokio::test]
async fn a_claim_passing_a_busy_project_over_takes_the_others_rows() {
    use app::db::queue;
    let app = TestApp::spawn_on(TestDb::new().await, |_| {}, false).await;
    let (busy, _) = app.project("business").await;
    let (other, _) = app.project("business").await;
    for i in 0..10 {
        app.endpoint(busy, &format!("http://127.0.0.1:9/busy{i}"))
            .await;
    }
    app.endpoint(other, "http://127.0.0.1:9/other").await;
    for i in 0..60 {
        app.ingest(busy, "order.paid", serde_json::json!({ "i": i }))
            .await;
    }
    app.ingest(other, "order.paid", serde_json::json!({})).await;
    let claims = queue::claim_pool(&app.pool);
    // Shares that never bind here, as for a project whose sends finish between claims.
    let roomy = queue::Caps {
        per_endpoint: 1000,
        per_project: 10_000,
        ..nothing_held()
    };
    let rows = queue::claim_due(&claims, "probe", 20, Duration::from_secs(30), &roomy)
        .await
        .unwrap();
    let taken = |rows: &[queue::Claimed], p: i64| {
        rows.iter()
            .filter(|r| r.of.project_id == ProjectId::new(p))
            .count()
    };
    assert_eq!(
        (taken(&rows, busy), taken(&rows, other)),
        (20, 0),
        "oldest first: the burst only"
    );
    let passing = queue::Caps {
        pass_over: Some(ProjectId::new(busy)),
        ..roomy
    };
    let rows = queue::claim_due(&claims, "probe", 20, Duration::from_secs(30), &passing)
        .await
        .unwrap();
    assert_eq!(
        (taken(&rows, busy), taken(&rows, other)),
        (0, 1),
        "passing the burst's project over"
    );
    app.stop().await;
}
