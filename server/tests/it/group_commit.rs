//! Lone events of concurrent requests stored together (`app::db::group_commit`): each
//! request still gets its own event, its own idempotency answer and its own error.

use crate::common;
use app::core::ProjectId;

use std::{collections::HashMap, sync::Arc, time::Duration};

use app::{
    core::event_type::EventType,
    db::{
        events::{self, Ingested, Via},
        group_commit::GroupCommit,
    },
    error::AppResult,
};
use common::{Receiver, TestApp};
use futures::StreamExt;

#[tokio::test]
async fn concurrent_requests_share_commits_and_each_gets_its_own_event() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start().await;
    let (project, key) = app.project("business").await;
    app.endpoint(project, &receiver.url).await;
    let client = reqwest::Client::new();
    // 300 requests, 32 at a time; 50 of them repeat an earlier request's idempotency key.
    let answers: Vec<(usize, u16, serde_json::Value)> = futures::stream::iter(0..300usize)
        .map(|i| {
            let request = client
                .post(format!("{}/public/v1/events", app.base))
                .bearer_auth(&key)
                .header("Idempotency-Key", format!("k-{}", i % 250))
                .json(&serde_json::json!({ "event": "order.paid", "data": { "i": i } }));
            async move {
                let r = request.send().await.unwrap();
                let status = r.status().as_u16();
                (i, status, r.json().await.unwrap())
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let mut by_key: HashMap<usize, String> = HashMap::new();
    for (i, status, body) in &answers {
        assert_eq!(*status, 202, "request {i}: {body}");
        let id = body["id"].as_str().unwrap().to_string();
        assert_eq!(body["deliveries"], 1);
        let first = by_key.entry(i % 250).or_insert_with(|| id.clone());
        assert_eq!(*first, id, "a repeated key answers with the first event");
    }
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE project_id = $1")
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, 250, "one event per idempotency key");
    let attempts: Vec<(String, i64)> = sqlx::query_as(
        "SELECT event_id, count(*) FROM deliveries WHERE project_id = $1 GROUP BY event_id",
    )
    .bind(project)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(attempts.len(), 250);
    assert!(attempts.iter().all(|(_, n)| *n == 1), "{attempts:?}");
    let seen = receiver.wait_for(250, Duration::from_secs(30)).await;
    let mut ids: Vec<String> = seen
        .iter()
        .map(|r| common::header(r, "x-event-id").to_string())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 250, "every event delivered once");
    let (groups, events, failed) = app.group.as_ref().expect("group commit on").counts();
    println!("{events} lone events stored in {groups} statements ({failed} failed whole)");
    assert_eq!(events, 300);
    assert!(
        groups < events,
        "32 requests at a time shared no commit ({groups} groups for {events} events)"
    );
    assert_eq!(failed, 0);
    app.stop().await;
}

/// Holds inserts into `events` until the returned transaction ends, so the writer's first
/// group waits and everything submitted meanwhile queues into the next one.
async fn hold_event_inserts(pool: &sqlx::PgPool) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

fn submit(
    pool: &sqlx::PgPool,
    group: &Arc<GroupCommit>,
    project: i64,
    client_id: Option<&str>,
) -> tokio::task::JoinHandle<AppResult<Ingested>> {
    let (pool, group) = (pool.clone(), group.clone());
    let client_id = client_id.map(str::to_string);
    tokio::spawn(async move {
        let via = Via {
            handoff: None,
            group: Some(&group),
            targets: None,
        };
        let t = EventType::parse("order.paid").unwrap();
        events::ingest_handing(
            &pool,
            ProjectId::new(project),
            &t,
            "{}",
            client_id.as_deref(),
            None,
            via,
        )
        .await
    })
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn an_event_the_database_refuses_fails_alone_and_a_repeated_key_keeps_the_first() {
    let app = TestApp::spawn_with(|cfg| cfg.ingest_writers = 0).await;
    let receiver = Receiver::start().await;
    let (project, _) = app.project("business").await;
    app.endpoint(project, &receiver.url).await;
    let group = GroupCommit::start(app.pool.clone(), 1);

    // A group with an event of a project that does not exist (a foreign key the
    // database enforces, as it would any other refusal): the statement fails whole.
    let held = hold_event_inserts(&app.pool).await;
    let first = submit(&app.pool, &group, project, None);
    until("the first group is taken", || group.counts().0 == 1).await;
    let poisoned = submit(&app.pool, &group, 987_654_321, None);
    let fine: Vec<_> = (0..3)
        .map(|_| submit(&app.pool, &group, project, None))
        .collect();
    until("the rest are waiting", || group.waiting() == 4).await;
    held.rollback().await.unwrap();

    assert!(first.await.unwrap().is_ok());
    assert!(poisoned.await.unwrap().is_err(), "the refused event fails");
    for f in fine {
        let stored = f.await.unwrap().expect("its neighbours are stored");
        assert!(!stored.repeated);
        assert_eq!(stored.deliveries, 1);
    }
    assert_eq!(group.counts(), (2, 5, 1));

    // One group holding the same idempotency key twice stores it once; both requests
    // answer with that event.
    let held = hold_event_inserts(&app.pool).await;
    let first = submit(&app.pool, &group, project, None);
    until("the first group is taken", || group.counts().0 == 3).await;
    let a = submit(&app.pool, &group, project, Some("same-key"));
    let b = submit(&app.pool, &group, project, Some("same-key"));
    let other = submit(&app.pool, &group, project, Some("other-key"));
    until("the rest are waiting", || group.waiting() == 3).await;
    held.rollback().await.unwrap();
    first.await.unwrap().unwrap();
    let (a, b) = (a.await.unwrap().unwrap(), b.await.unwrap().unwrap());
    let other = other.await.unwrap().unwrap();
    assert_eq!(a.event_id, b.event_id);
    assert!(
        a.repeated != b.repeated,
        "one stored it, the other repeats it"
    );
    assert_ne!(other.event_id, a.event_id);
    assert_eq!(group.counts(), (4, 9, 1), "the second group did not fail");
    let rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE event_id = $1 OR event_id = $2")
            .bind(&a.event_id)
            .bind(&other.event_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(rows, 2, "one attempt each, none for the repeat");
    // Every stored event reaches the receiver: 1 + 3 + 1 + 2.
    assert_eq!(receiver.wait_for(7, Duration::from_secs(30)).await.len(), 7);
    app.stop().await;
}

#[tokio::test]
async fn concurrent_requests_counted_together_keep_each_count_exact() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("trial").await; // 30 requests a minute
                                               // The requests must fall in one minute's window.
    while chrono::Utc::now().timestamp() % 60 > 50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let client = reqwest::Client::new();
    let answers: Vec<(u16, String)> = futures::stream::iter(0..70usize)
        .map(|i| {
            // Every seventh request presents a key that does not exist.
            let presented = if i % 7 == 3 {
                "phk_not_a_key".to_string()
            } else {
                key.clone()
            };
            let request = client
                .post(format!("{}/public/v1/events", app.base))
                .bearer_auth(presented)
                .json(&serde_json::json!({ "event": "order.paid", "data": { "i": i } }));
            async move {
                let r = request.send().await.unwrap();
                let remaining = r.headers()["x-ratelimit-remaining"]
                    .to_str()
                    .unwrap()
                    .to_string();
                (r.status().as_u16(), remaining)
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let status_count = |s: u16| answers.iter().filter(|a| a.0 == s).count();
    assert_eq!(status_count(401), 10, "{answers:?}");
    assert_eq!(
        status_count(202),
        30,
        "exactly the minute's limit: {answers:?}"
    );
    assert_eq!(status_count(429), 30, "{answers:?}");
    let mut remaining: Vec<u32> = answers
        .iter()
        .filter(|a| a.0 == 202)
        .map(|a| a.1.parse().unwrap())
        .collect();
    remaining.sort_unstable();
    assert_eq!(
        remaining,
        (0..30).collect::<Vec<u32>>(),
        "each accepted request saw its own count"
    );
    let (groups, hits) = app.group.as_ref().unwrap().key_counts();
    println!("{hits} key hits counted in {groups} statements");
    assert_eq!(
        hits, 70,
        "every presented key is looked up, the unknown one too"
    );
    assert!(groups < hits, "{groups} groups for {hits} hits");
    app.stop().await;
}

/// A kept connection is reused while fresh; one whose statement failed, or that sat a
/// second unused, goes back to the pool, which checks it, so a backend that died while
/// idle costs no statement.
#[tokio::test]
async fn kept_connections_are_reused_only_while_fresh_and_sound() {
    use app::db::kept::Kept;
    let db = common::TestDb::new().await;
    let pool = app::db::connect(&db.url, 4).await.unwrap();
    let kept = Kept::new(pool.clone(), 1);
    let terminate = |pid: i32| {
        let pool = pool.clone();
        async move {
            sqlx::query("SELECT pg_terminate_backend($1)")
                .bind(pid)
                .execute(&pool)
                .await
                .unwrap();
        }
    };

    let mut conn = kept.get().await.unwrap();
    let first = backend(&mut conn).await.unwrap();
    conn.keep();
    assert_eq!(kept.idle(), 1);
    let mut conn = kept.get().await.unwrap();
    assert_eq!(
        backend(&mut conn).await.unwrap(),
        first,
        "the kept one is reused"
    );
    let failed = sqlx::query("SELECT 1 / 0").execute(&mut *conn).await;
    assert!(conn.keep_if_ok(failed).is_err());
    assert_eq!(
        kept.idle(),
        0,
        "a connection whose statement failed is not kept"
    );

    // Killed while kept, and taken within the second: its next statement fails, and
    // it is not kept; the next one taken works.
    let mut conn = kept.get().await.unwrap();
    let pid = backend(&mut conn).await.unwrap();
    conn.keep();
    terminate(pid).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut conn = kept.get().await.unwrap();
    let broken = backend(&mut conn).await;
    assert!(conn.keep_if_ok(broken).is_err());
    let mut conn = kept.get().await.unwrap();
    let pid = backend(&mut conn).await.unwrap();
    conn.keep();

    // Killed while kept, and left a second: it goes back to the pool, which finds it
    // dead and hands out a live one.
    terminate(pid).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut conn = kept.get().await.unwrap();
    let live = backend(&mut conn).await.expect("a checked connection");
    assert_ne!(live, pid);
}

async fn backend(conn: &mut sqlx::PgConnection) -> Result<i32, sqlx::Error> {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(conn)
        .await
}
