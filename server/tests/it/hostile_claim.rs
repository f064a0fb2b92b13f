//! The dispatcher's claim under load no customer should be able to put on it: a disabled
//! endpoint's backlog, a deep backlog behind a busy endpoint, and a burst between two
//! analyzes cost the claim that finds another project's attempt nothing.

use crate::common;
use app::core::{EndpointId, ProjectId};

/// These tests measure claim times; run side by side, each one's load (300,000-row
/// inserts) would be the other's noise.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

use std::time::{Duration, Instant};

use common::*;

/// Median milliseconds of a claim that finds another project's one due row, released
/// after each, by a worker in which the `busy` endpoints are at their share, on a
/// connection set up as the dispatcher's own.
async fn claim_median_ms(pool: &sqlx::PgPool, busy: &[EndpointId]) -> f64 {
    let claims = app::db::queue::claim_pool(pool);
    claim_median_ms_on(&claims, busy, 1).await
}

/// Median milliseconds of a claim on `pool` that takes `expect` rows (released after
/// each), by a worker in which the `busy` endpoints are at their share.
async fn claim_median_ms_on(pool: &sqlx::PgPool, busy: &[EndpointId], expect: usize) -> f64 {
    claim_median_ms_holding(pool, busy, 16, expect).await
}

/// [`claim_median_ms_on`], the `busy` endpoints holding `holding` rows each.
async fn claim_median_ms_holding(
    pool: &sqlx::PgPool,
    busy: &[EndpointId],
    holding: i64,
    expect: usize,
) -> f64 {
    use app::db::queue;
    let held = vec![holding; busy.len()];
    let caps = queue::Caps {
        per_endpoint: 16,
        per_project: 128,
        endpoints: busy,
        endpoint_held: &held,
        projects: &[],
        project_held: &[],
        throttled_held: false,
        backlogged: false,
        sole_project_room: None,
        pass_over: None,
    };
    let mut times = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let rows = queue::claim_due(pool, "probe", 200, Duration::from_secs(30), &caps)
            .await
            .unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(rows.len(), expect, "only these rows are sendable");
        let held: Vec<_> = rows.iter().map(|r| (r.id, r.created_at)).collect();
        queue::release(pool, "probe", &held).await.unwrap();
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    times[times.len() / 2]
}

/// A disabled endpoint's waiting attempts (what auto-disable leaves after days of a busy
/// endpoint's events) are parked out of the claim's index: 300,000 of them do not slow
/// the claim that finds another project's attempt, and enabling the endpoint resumes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_endpoints_backlog_costs_the_claim_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (held_project, _) = app.project("business").await;
    let (held_endpoint, _) = app.endpoint(held_project, "http://127.0.0.1:9/hook").await;
    let held_event = app
        .ingest(held_project, "order.paid", serde_json::json!({}))
        .await;
    let (other, _) = app.project("business").await;
    app.endpoint(other, "http://127.0.0.1:9/other").await;
    app.ingest(other, "order.paid", serde_json::json!({})).await;
    // The held endpoint's one row is due too: disable it before measuring.
    let access = app::auth::system_access(ProjectId::new(held_project), "test");
    let disable = |enabled| app::db::endpoints::EndpointPatch {
        url: None,
        event_types: None,
        description: None,
        enabled: Some(enabled),
        rate_limit: None,
    };
    app::db::endpoints::update(
        &app.pool,
        &access,
        EndpointId::new(held_endpoint),
        disable(false),
    )
    .await
    .unwrap();
    let without = claim_median_ms(&app.pool, &[]).await;

    // 300,000 attempts of the held endpoint, all due, then the endpoint disabled again.
    app::db::endpoints::update(
        &app.pool,
        &access,
        EndpointId::new(held_endpoint),
        disable(true),
    )
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                     trigger, status, scheduled_at, request_id)
         SELECT $1, $2, 'order.paid', $3, 'http://127.0.0.1:9/hook', 1, 'auto', 'pending',
                now() - interval '1 hour' + g * interval '1 ms', 'req_backlog_' || g
         FROM generate_series(1, 300000) g",
    )
    .bind(held_project)
    .bind(&held_event)
    .bind(held_endpoint)
    .execute(&app.pool)
    .await
    .unwrap();
    let started = Instant::now();
    app::db::endpoints::update(
        &app.pool,
        &access,
        EndpointId::new(held_endpoint),
        disable(false),
    )
    .await
    .unwrap();
    let parking = started.elapsed();
    // Until vacuum removes them, the parked rows' old versions leave dead entries in the
    // due index that a claim steps over; autovacuum clears them within a minute of such
    // a change (300,000 dead rows are far past its threshold). Measured as it then stands.
    let before_vacuum = claim_median_ms(&app.pool, &[]).await;
    // A snapshot older than the parking (an autoanalyze that the insert started while the
    // parking ran, say) would keep vacuum from removing anything: wait for it to end.
    for _ in 0..300 {
        let older: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if older == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sqlx::query("VACUUM ANALYZE delivery_queue")
        .execute(&app.pool)
        .await
        .unwrap();
    let with = claim_median_ms(&app.pool, &[]).await;
    let parked: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE parked AND status = 'pending'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    println!(
        "claim median: {without:.2} ms without the backlog, {with:.2} ms beside 300,000 held attempts \
         ({before_vacuum:.2} ms before vacuum; disabling parked {parked} rows in {parking:?})"
    );
    assert_eq!(parked, 300_001);
    if with >= (without * 3.0).max(without + 5.0) {
        // What the claim's walk does, to read in the log when this fails.
        let plan: Vec<String> = sqlx::query_scalar(
            "EXPLAIN (ANALYZE, BUFFERS)
             SELECT d.id FROM delivery_queue d JOIN endpoints e ON e.id = d.endpoint_id
              WHERE d.status = 'pending' AND NOT d.parked AND d.scheduled_at <= now()
                AND (d.trigger IN ('redirect', 'test') OR (e.enabled AND e.deleted_at IS NULL))
              ORDER BY d.scheduled_at LIMIT 800 FOR UPDATE OF d SKIP LOCKED",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap();
        let stats: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT relname::text, n_live_tup, n_dead_tup FROM pg_stat_user_tables WHERE relname LIKE 'deliver%' AND n_live_tup + n_dead_tup > 0",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap();
        println!("plan:\n{}\ntables: {stats:?}", plan.join("\n"));
    }
    assert!(
        with < (without * 3.0).max(without + 5.0),
        "{with:.2} ms vs {without:.2} ms"
    );

    // Enabled again, the backlog is due again, nothing lost.
    app::db::endpoints::update(
        &app.pool,
        &access,
        EndpointId::new(held_endpoint),
        disable(true),
    )
    .await
    .unwrap();
    let (parked, due): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE parked), count(*) FILTER (WHERE NOT parked)
         FROM deliveries WHERE status = 'pending' AND endpoint_id = $1",
    )
    .bind(held_endpoint)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((parked, due), (0, 300_001));
    app.stop().await;
}

/// 100,000 due attempts queued behind an endpoint at its share (one that answers in a
/// second stays there) are passed over whole: the claim that finds another project's
/// attempt costs what it costs without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_backlog_behind_a_busy_endpoint_costs_the_claim_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (busy_project, _) = app.project("business").await;
    let (busy, _) = app.endpoint(busy_project, "http://127.0.0.1:9/busy").await;
    let busy_event = app
        .ingest(busy_project, "order.paid", serde_json::json!({}))
        .await;
    let (other, _) = app.project("business").await;
    app.endpoint(other, "http://127.0.0.1:9/other").await;
    app.ingest(other, "order.paid", serde_json::json!({})).await;
    let without = claim_median_ms(&app.pool, &[EndpointId::new(busy)]).await;
    // The busy endpoint with room for 7 more, on the dispatcher's claim connection.
    let claims = app::db::queue::claim_pool(&app.pool);
    let room_without = claim_median_ms_holding(&claims, &[EndpointId::new(busy)], 9, 2).await;

    sqlx::query(
        "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                     trigger, status, scheduled_at, request_id)
         SELECT $1, $2, 'order.paid', $3, 'http://127.0.0.1:9/busy', 1, 'auto', 'pending',
                now() - interval '1 hour' + g * interval '1 ms', 'req_deep_' || g
         FROM generate_series(1, 100000) g",
    )
    .bind(busy_project)
    .bind(&busy_event)
    .bind(busy)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE delivery_queue")
        .execute(&app.pool)
        .await
        .unwrap();
    let with = claim_median_ms(&app.pool, &[EndpointId::new(busy)]).await;
    let room_with = claim_median_ms_holding(&claims, &[EndpointId::new(busy)], 9, 8).await;
    println!(
        "claim median: {without:.2} ms without the backlog, {with:.2} ms beside 100,000 due attempts of a busy endpoint; \
         with room for 7 of them: {room_without:.2} ms and {room_with:.2} ms"
    );
    assert!(
        room_with < (room_without * 3.0).max(room_without + 5.0),
        "{room_with:.2} ms vs {room_without:.2} ms"
    );
    assert!(
        with < (without * 3.0).max(without + 5.0),
        "{with:.2} ms vs {without:.2} ms"
    );
    app.stop().await;
}

/// A burst lands between two ANALYZEs: the queue holds 100,000 due attempts
/// while its statistics still say it is empty (the state of every queue table after a
/// burst). A plan built on those statistics reads every due row and sorts them to take a
/// few; the dispatcher's claim connection walks the due index in order whatever they say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_between_two_analyzes_does_not_slow_the_claim() {
    use app::db::queue;
    let _turn = ONE_AT_A_TIME.lock().await;
    let db = TestDb::new().await;
    let app = TestApp::spawn_on(db, |_| {}, false).await;
    let (project, _) = app.project("business").await;
    let (endpoint, _) = app.endpoint(project, "http://127.0.0.1:9/burst").await;
    let event = app
        .ingest(project, "order.paid", serde_json::json!({}))
        .await;
    // Statistics of an almost empty queue, kept as they are.
    sqlx::query("ANALYZE delivery_queue")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("ALTER TABLE delivery_queue SET (autovacuum_enabled = off)")
        .execute(&app.pool)
        .await
        .unwrap();
    let claims = queue::claim_pool(&app.pool);
    let without = claim_median_ms_on(&claims, &[], 1).await;
    let burst = |from: i64, to: i64| {
        sqlx::query(
            "INSERT INTO delivery_queue (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                                         trigger, status, scheduled_at, request_id)
             SELECT $1, $2, 'order.paid', $3, 'http://127.0.0.1:9/burst', 1, 'auto', 'pending',
                    now() - interval '1 minute' + g * interval '0.1 ms', 'req_burst_' || g
             FROM generate_series($4::bigint, $5::bigint) g",
        )
        .bind(project)
        .bind(&event)
        .bind(endpoint)
        .bind(from)
        .bind(to)
    };
    // A burst just past what one claim reads (800 candidates), then 100,000.
    burst(1, 2_000).execute(&app.pool).await.unwrap();
    let small = claim_median_ms_on(&claims, &[], 16).await;
    burst(2_001, 100_000).execute(&app.pool).await.unwrap();
    let with = claim_median_ms_on(&claims, &[], 16).await;
    // The same claim on an ordinary connection, planned from those statistics.
    let plain = claim_median_ms_on(&app.pool, &[], 16).await;
    println!(
        "claim median: {without:.2} ms before the burst, {small:.2} ms beside 2,000 due attempts and \
         {with:.2} ms beside 100,000 that the statistics do not know of ({plain:.2} ms on an \
         ordinary connection)"
    );
    assert!(
        with < (small * 2.0).max(small + 5.0),
        "{with:.2} ms beside 100,000 vs {small:.2} ms beside 2,000"
    );
    app.stop().await;
}
