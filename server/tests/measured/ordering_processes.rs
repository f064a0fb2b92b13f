//! Ordering keys across processes and at scale: each key's order survives two dispatcher
//! processes and a kill -9, and a thousand keys reach the endpoint's concurrency.

use crate::common;

use std::{
    process::{Child, Command, Stdio},
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use common::{ordering::*, TestApp, TestDb};
use serde_json::json;

/// A `posthorn dispatch` process on the test's database.
fn dispatcher(db_url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_posthorn"))
        .arg("dispatch")
        .env("DATABASE_URL", db_url)
        .env("POSTHORN_ALLOW_PRIVATE_TARGETS", "true")
        .env("POSTHORN_LEASE", "2s")
        .env("POSTHORN_RETRY_SCHEDULE", "1s,1s,1s")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start posthorn dispatch")
}

/// Keys "k0".."k4" with six events each; within a key the receipts must follow the
/// acceptance order, a retried event's attempts together, repeats (a resend after a
/// crash, same request id) allowed right after themselves.
fn assert_each_key_in_order(seen: &[Seen], keys: &[Vec<String>]) {
    for events in keys {
        let mut got: Vec<&Seen> = seen.iter().filter(|s| events.contains(&s.event)).collect();
        got.dedup_by(|b, a| a.request_id == b.request_id);
        let mut firsts: Vec<&String> = got.iter().map(|s| &s.event).collect();
        firsts.dedup();
        assert_eq!(
            firsts,
            events.iter().collect::<Vec<_>>(),
            "a key's events arrived out of order: {got:?}"
        );
    }
}

async fn send_keys(api: &Api, slow_ms: u64) -> Vec<Vec<String>> {
    let mut keys = Vec::new();
    for k in 0..5 {
        let events = (0..6)
            .map(|i| {
                keyed(
                    &format!("k{k}"),
                    json!({"i": i, "fail_first": i % 3 == 0, "slow_ms": if i == 2 { slow_ms } else { 0 }}),
                )
            })
            .collect();
        keys.push(api.batch(events).await);
    }
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_dispatcher_processes_and_a_kill_keep_each_keys_order() {
    let _alone = crate::shared().await;
    let app = TestApp::spawn_on(TestDb::new().await, |_| {}, false).await;
    let rx = Rx::start().await;
    let api = setup(&app, &rx).await;
    let mut dispatchers = vec![dispatcher(&app.db_url), dispatcher(&app.db_url)];

    // Two processes: 30 events, 10 of them failing once.
    let keys = send_keys(&api, 0).await;
    let seen = rx.wait_for(40, Duration::from_secs(40)).await;
    assert_eq!(seen.len(), 40, "30 events, 10 retried once");
    assert_each_key_in_order(&seen, &keys);
    drained(&app.pool, Duration::from_secs(10)).await;

    // A kill -9 of both while every key's third event is being answered (slowly): after
    // its lease it is sent again, by a new process, and still ahead of the rest.
    let before = rx.seen().len();
    let keys = send_keys(&api, 1500).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while rx.seen()[before..]
        .iter()
        .filter(|s| keys.iter().any(|k| k[2] == s.event))
        .count()
        < 5
    {
        assert!(Instant::now() < deadline, "the slow events never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for d in &mut dispatchers {
        let _ = d.kill();
        let _ = d.wait();
    }
    let mut fresh = dispatcher(&app.db_url);
    drained(&app.pool, Duration::from_secs(60)).await;
    let _ = fresh.kill();
    let _ = fresh.wait();
    let seen = rx.seen()[before..].to_vec();
    assert_each_key_in_order(&seen, &keys);
    let resent = keys
        .iter()
        .filter(|k| seen.iter().filter(|s| s.event == k[2]).count() > 1)
        .count();
    assert!(resent >= 1, "the killed attempts were sent again");
    let (events, succeeded): (i64, i64) = sqlx::query_as(
        "SELECT count(DISTINCT event_id), count(DISTINCT event_id) FILTER (WHERE status = 'succeeded')
         FROM deliveries",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((events, succeeded), (60, 60), "nothing lost");
    app.stop().await;
}

/// One key is sequential by design; many keys must still fill the endpoint's share.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_keys_reach_the_endpoints_concurrency() {
    let _alone = crate::shared().await;
    let app = TestApp::spawn_with(|cfg| {
        cfg.plan_limits = app::core::ratelimit::PlanLimits::parse("business=100000").unwrap();
    })
    .await;
    let rx = Rx::start().await;
    let api = setup(&app, &rx).await;
    let mut figures = Vec::new();
    for keyed_run in [false, true] {
        rx.log.peak.store(0, Ordering::SeqCst);
        let before = rx.seen().len();
        let started = Instant::now();
        for b in 0..10 {
            let events = (0..100)
                .map(|i| {
                    let mut e = json!({"event": "order.updated", "data": {"slow_ms": 100}});
                    if keyed_run {
                        e["ordering_key"] = json!(format!("key-{}", b * 100 + i));
                    }
                    e
                })
                .collect();
            api.batch(events).await;
        }
        let accepted = started.elapsed();
        rx.wait_for(before + 1000, Duration::from_secs(60)).await;
        let took = started.elapsed();
        drained(&app.pool, Duration::from_secs(10)).await;
        let peak = rx.log.peak.load(Ordering::SeqCst);
        println!(
            "{}: 1,000 events accepted in {:.2} s, delivered (receiver answers in 100 ms) in {:.2} s, at most {peak} at once",
            if keyed_run { "1,000 keys" } else { "no keys" },
            accepted.as_secs_f64(),
            took.as_secs_f64()
        );
        figures.push((peak, took));
    }
    let share = common::test_config(&app.db_url).per_endpoint_concurrency;
    assert!(
        figures[1].0 >= share * 3 / 4,
        "1,000 keys reached only {} of the endpoint's {share} at once",
        figures[1].0
    );
    app.stop().await;
}
