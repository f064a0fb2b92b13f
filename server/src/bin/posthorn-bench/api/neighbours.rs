//! Hostile neighbours for the latency benchmark: another project doing, through the
//! product, the most its limits allow of something that once cost every tenant.
//!
//! - `replays`: as many bulk replays at once as `concurrent_replays` allows (3), each of
//!   100,000 (event, endpoint) pairs, all to an endpoint that is disabled.
//! - `keyed-batches`: three keyed batches of 100 events at once, each to the most
//!   endpoints a project may have (500), sent as the measurement starts.

use std::time::Instant;

use super::rig::Rig;

/// The replays' pairs each, and how many run at once (the default limits).
const REPLAY_PAIRS: i64 = 100_000;
const REPLAYS: i64 = 3;
const BATCHES: u64 = 3;
const ENDPOINTS: usize = 500;

/// Another project with `REPLAYS` running replays of `REPLAY_PAIRS` pairs each to its one
/// disabled endpoint. The history they replay is written with SQL (100,000 dead letters),
/// and the replays as `use_cases::replays::start` writes them; the server's replayer then
/// queues their attempts, a few per second each, for the whole measurement.
pub async fn replays(rig: &Rig) {
    let started = Instant::now();
    let key = Rig::project(&rig.db_url);
    let url = rig.receiver_url("/slow");
    let endpoint = rig.endpoint(&key, &url).await;
    let project: i64 = sqlx::query_scalar("SELECT project_id FROM endpoints WHERE id = $1")
        .bind(endpoint)
        .fetch_one(&rig.pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO events (event_id, project_id, event_type, data, deliveries)
         SELECT 'evt_replay' || lpad(g::text, 14, '0'), $1, 'order.paid', '{\"n\":1}', 1
         FROM generate_series(1, $2) g",
    )
    .bind(project)
    .bind(REPLAY_PAIRS)
    .execute(&rig.pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO delivery_log (project_id, event_id, event_type, endpoint_id, target_url,
                attempt, trigger, status, scheduled_at, finished_at, request_id, error_kind, error)
         SELECT $1, 'evt_replay' || lpad(g::text, 14, '0'), 'order.paid', $2, 'http://x/slow',
                6, 'auto', 'dead_letter', now() - interval '1 hour', now() - interval '1 hour',
                'req_replay' || lpad(g::text, 16, '0'), 'http_status', 'HTTP 500'
         FROM generate_series(1, $3) g",
    )
    .bind(project)
    .bind(endpoint)
    .bind(REPLAY_PAIRS)
    .execute(&rig.pool)
    .await
    .unwrap();
    rig.disable(&key, endpoint).await;
    for _ in 0..REPLAYS {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO replays (project_id, created_by, filter, per_second, total)
             VALUES ($1, 'bench', '{}', 10, $2) RETURNING id",
        )
        .bind(project)
        .bind(REPLAY_PAIRS as i32)
        .fetch_one(&rig.pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO replay_items (replay_id, event_id, endpoint_id)
             SELECT $1, 'evt_replay' || lpad(g::text, 14, '0'), $2 FROM generate_series(1, $3) g",
        )
        .bind(id)
        .bind(endpoint)
        .bind(REPLAY_PAIRS)
        .execute(&rig.pool)
        .await
        .unwrap();
    }
    sqlx::query("VACUUM ANALYZE")
        .execute(&rig.pool)
        .await
        .unwrap();
    sqlx::query("CHECKPOINT").execute(&rig.pool).await.unwrap();
    println!(
        "neighbour: {REPLAYS} running replays of {REPLAY_PAIRS} pairs each to a disabled endpoint, made in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Another project with `ENDPOINTS` endpoints (made through the API); returns its key.
pub async fn wide_project(rig: &Rig) -> String {
    let started = Instant::now();
    let key = Rig::project(&rig.db_url);
    let url = rig.receiver_url("/wide");
    for _ in 0..ENDPOINTS {
        rig.endpoint(&key, &url).await;
    }
    println!(
        "neighbour: a project with {ENDPOINTS} endpoints, made in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    key
}

/// Sends `BATCHES` batches of 100 events at once to the wide project, each event with an
/// ordering key of its own when `keyed`; returns when all are answered, printing their
/// statuses and time. Without keys, the same fan-out is the control: what the keys
/// (their locks and lanes) add to it.
pub async fn batches(client: reqwest::Client, base: String, key: String, keyed: bool) {
    let started = Instant::now();
    let sends = (0..BATCHES).map(|b| {
        let items: Vec<String> = (0..100)
            .map(|i| {
                let ordering = match keyed {
                    true => format!(r#","ordering_key":"customer-{b}-{i}""#),
                    false => String::new(),
                };
                format!(r#"{{"event":"order.paid","data":{{"order":{i}}}{ordering}}}"#)
            })
            .collect();
        let request = client
            .post(format!("{base}/public/v1/events/batch"))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body(format!(r#"{{"events":[{}]}}"#, items.join(",")));
        async move {
            match request.send().await {
                Ok(r) => r.status().as_u16(),
                Err(_) => 0,
            }
        }
    });
    let statuses = futures::future::join_all(sends).await;
    println!(
        "neighbour: {BATCHES} {} batches of 100 events × {ENDPOINTS} endpoints answered {statuses:?} in {:.1} s",
        if keyed { "keyed" } else { "unkeyed" },
        started.elapsed().as_secs_f64()
    );
}

/// What the replays queued during the measurement, and how much of it is parked.
pub async fn replays_report(rig: &Rig) {
    let (queued, parked): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE parked) FROM delivery_queue
          WHERE triggered_by LIKE '%bulk replay%'",
    )
    .fetch_one(&rig.pool)
    .await
    .unwrap();
    println!("neighbour: the replays queued {queued} attempts for the disabled endpoint, {parked} of them parked");
}
