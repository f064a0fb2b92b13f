//! A throttled endpoint keeps its rate while other tenants' endpoints hang. It runs solo
//! (see `main.rs`): it measures a rate, so no sibling test competes for the CPU meanwhile.

use crate::common;
use app::core::ProjectId;

use std::time::{Duration, Instant};

use common::{Answer, Receiver, TestApp};
use serde_json::json;

/// `posthorn_start_slots_missed_total` from `/metrics` (0 while no slot was missed).
async fn slots_missed(app: &TestApp) -> u64 {
    let text = reqwest::get(format!("{}/metrics", app.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("posthorn_start_slots_missed_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_endpoint_keeps_its_rate_while_two_other_tenants_hang() {
    let _alone = crate::solo().await;
    // Two tenants at their shares fill every concurrency slot of the dispatcher.
    let app = TestApp::spawn_with(|cfg| {
        cfg.concurrency = 8;
        cfg.project_concurrency = 4;
        cfg.per_endpoint_concurrency = 2;
        cfg.read_timeout = Duration::from_secs(60);
    })
    .await;
    let hanging = Receiver::start().await;
    hanging.set_default(Answer::status(200).delay(Duration::from_secs(120)));
    for _ in 0..2 {
        let (project, _) = app.project("business").await;
        for _ in 0..2 {
            app.endpoint(project, &hanging.url).await;
        }
        for i in 0..10 {
            app.ingest(project, "order.paid", json!({ "h": i })).await;
        }
    }
    let held = hanging.wait_for(8, Duration::from_secs(10)).await.len();
    assert_eq!(held, 8, "both tenants hold their shares");

    let throttled = Receiver::start().await;
    let (project, _) = app.project("business").await;
    app::db::endpoints::create(
        &mut app.pool.acquire().await.unwrap(),
        &app::auth::system_access(ProjectId::new(project), "test"),
        app::db::endpoints::NewEndpoint {
            url: &throttled.url,
            event_types: &["*".into()],
            description: "",
            rate_limit: Some(5),
        },
    )
    .await
    .unwrap();
    let started = Instant::now();
    for i in 0..60 {
        app.ingest(project, "order.paid", json!({ "t": i })).await;
    }
    tokio::time::sleep(Duration::from_secs(10).saturating_sub(started.elapsed())).await;
    let arrived = throttled
        .seen()
        .iter()
        .filter(|r| r.at.duration_since(started) <= Duration::from_secs(10))
        .count();
    let missed = slots_missed(&app).await;
    println!("5/s beside two hanging tenants: {arrived} attempts in 10 s, {missed} slots missed");
    assert_eq!(hanging.seen().len(), 8, "the other tenants still hang");
    assert!(
        arrived >= 40,
        "a throttled endpoint at 5/s got {arrived} attempts in 10 s while two other tenants hung"
    );
    assert!(
        missed <= 5,
        "{missed} start slots missed: attempts handed back in a loop"
    );
}
