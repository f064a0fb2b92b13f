//! The inspector between tenants and strangers: one source address cannot take the whole
//! storage budget, and Posthorn's own deliveries to bins (Redirects, endpoints pointed at
//! bins) are limited per project, never by the address they come from.

use crate::common;
use app::core::{AttemptId, ProjectId};

use std::{net::IpAddr, time::Duration};

use common::{Receiver, TestApp};
use serde_json::{json, Value};

/// An HTTP client whose requests come from `from` (any 127.x.y.z reaches loopback).
fn client_from(from: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(from.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

async fn new_bin(app: &TestApp, http: &reqwest::Client) -> (String, String) {
    let v: Value = http
        .post(format!("{}/inspector/bins", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    (id, v["url"].as_str().unwrap().to_string())
}

/// The captures of a bin, newest first.
async fn captures(app: &TestApp, id: &str) -> Vec<Value> {
    let v: Value = reqwest::get(format!(
        "{}/inspector/bins/{id}/requests?limit=100",
        app.base
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    v["data"].as_array().unwrap().clone()
}

/// Waits until at least `margin` seconds of the current calendar minute remain, so the
/// per-minute counters a test fills are still full when it checks them.
async fn with_minute_left(margin: u64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let left = 60 - now % 60;
    if left < margin {
        tokio::time::sleep(Duration::from_secs(left + 1)).await;
    }
}

/// Redirects the event's first attempt to a new bin as `project`'s support would, and
/// waits for the redirect to finish: (its status, response status, the bin's id).
async fn redirect(app: &TestApp, project: i64, event_id: &str) -> (String, Option<i16>, String) {
    let original: i64 = sqlx::query_scalar(
        "SELECT id FROM deliveries WHERE event_id = $1 AND trigger = 'auto' ORDER BY id LIMIT 1",
    )
    .bind(event_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let mut cfg = common::test_config(&app.db_url);
    cfg.public_url = app.base.clone();
    let access = app::auth::system_access(ProjectId::new(project), "support@example.com");
    let (row, bin) = app::use_cases::deliveries::redirect(
        &app.pool,
        &cfg,
        &access,
        AttemptId::new(original),
        None,
    )
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let (status, code): (String, Option<i16>) =
            sqlx::query_as("SELECT status, response_status FROM deliveries WHERE id = $1")
                .bind(row.id)
                .fetch_one(&app.pool)
                .await
                .unwrap();
        if status != "pending" && status != "in_flight" {
            return (status, code, bin);
        }
        assert!(tokio::time::Instant::now() < deadline, "the redirect hung");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A project whose one endpoint answers 200, with one delivered event: (project, event).
async fn project_with_delivered_event(app: &TestApp, receiver: &Receiver) -> (i64, String) {
    let (project, _) = app.project("business").await;
    app.endpoint(project, &receiver.url).await;
    let event = app.ingest(project, "order.paid", json!({ "n": 1 })).await;
    let attempts = app.settled(&event, Duration::from_secs(10)).await;
    assert_eq!(attempts[0].1, "succeeded");
    (project, event)
}

#[tokio::test]
async fn one_address_filling_its_share_does_not_stop_another_address() {
    let app = TestApp::spawn_with(|cfg| cfg.inspector_budget_bytes = 10 * 1024 * 1024).await;
    let (first, second) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    let (_, url) = new_bin(&app, &first).await;
    let body = vec![b'a'; 1000 * 1024];
    // The first address captures until the inspector refuses it.
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let status = first.post(&url).body(body.clone()).send().await.unwrap();
        statuses.push(status.status().as_u16());
        if statuses.last() == Some(&507) {
            break;
        }
    }
    assert_eq!(statuses.last(), Some(&507), "{statuses:?}");
    let (_, other_url) = new_bin(&app, &second).await;
    let other = second.post(&other_url).body(body.clone()).send().await;
    let other = other.unwrap().status().as_u16();
    println!("first address: {statuses:?}; then the second address: {other}");
    assert_eq!(
        other,
        200,
        "a second address is refused once the first took {} captures",
        statuses.len() - 1
    );
    let again = first.post(&url).body(body).send().await.unwrap();
    assert_eq!(again.status(), 507, "the first address stays at its share");
    app.stop().await;
}

#[tokio::test]
async fn redirects_land_after_a_stranger_used_up_the_loopback_capture_rate() {
    let app = TestApp::spawn_with(|cfg| cfg.capture_per_minute = 5).await;
    let receiver = Receiver::start().await;
    let (project, event) = project_with_delivered_event(&app, &receiver).await;
    with_minute_left(40).await;
    let stranger = client_from("127.0.0.1");
    let (_, url) = new_bin(&app, &stranger).await;
    let mut refused = 0;
    for _ in 0..8 {
        if stranger.post(&url).send().await.unwrap().status() == 429 {
            refused += 1;
        }
    }
    assert!(refused > 0, "the stranger reached the address's limit");
    let (status, code, bin) = redirect(&app, project, &event).await;
    assert_eq!(
        (status.as_str(), code),
        ("succeeded", Some(200)),
        "the Redirect after a stranger used up 127.0.0.1's captures"
    );
    let caught = captures(&app, &bin).await;
    assert_eq!(caught.len(), 1);
    let headers: Vec<(String, String)> =
        serde_json::from_value(caught[0]["headers"].clone()).unwrap();
    assert!(headers.iter().any(|(k, _)| k == "x-botix-signature"));
    assert!(
        headers.iter().all(|(k, _)| !k.starts_with("x-posthorn")),
        "the bin shows what a receiver gets, nothing of Posthorn's own: {headers:?}"
    );
    assert_eq!(
        stranger.post(&url).send().await.unwrap().status(),
        429,
        "the stranger is still over the address's limit"
    );
    app.stop().await;
}

#[tokio::test]
async fn one_tenants_flood_of_deliveries_to_bins_does_not_refuse_another_tenants_redirect() {
    let app = TestApp::spawn_with(|cfg| cfg.capture_per_minute = 20).await;
    let receiver = Receiver::start().await;
    let (other, event) = project_with_delivered_event(&app, &receiver).await;
    with_minute_left(45).await;
    // A tenant whose endpoint points at a bin sends it 40 events at once.
    let (flooder, _) = app.project("business").await;
    let (_, bin_url) = new_bin(&app, &reqwest::Client::new()).await;
    app.endpoint(flooder, &bin_url).await;
    for i in 0..40 {
        app.ingest(flooder, "order.paid", json!({ "f": i })).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let finished: i64 = sqlx::query_scalar(
            "SELECT count(DISTINCT event_id) FROM deliveries
             WHERE project_id = $1 AND status NOT IN ('pending', 'in_flight')",
        )
        .bind(flooder)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if finished >= 40 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{finished} of 40 sent"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, code, bin) = redirect(&app, other, &event).await;
    assert_eq!(
        (status.as_str(), code),
        ("succeeded", Some(200)),
        "another tenant's Redirect after one tenant's flood of deliveries to a bin"
    );
    assert_eq!(captures(&app, &bin).await.len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn a_projects_deliveries_to_bins_have_a_rate_of_their_own() {
    let app = TestApp::spawn_with(|cfg| {
        cfg.capture_per_minute = 10;
        cfg.project_capture_per_minute = 10;
    })
    .await;
    let receiver = Receiver::start().await;
    let (other, event) = project_with_delivered_event(&app, &receiver).await;
    with_minute_left(45).await;
    let (flooder, _) = app.project("business").await;
    let (bin, bin_url) = new_bin(&app, &reqwest::Client::new()).await;
    app.endpoint(flooder, &bin_url).await;
    for i in 0..30 {
        app.ingest(flooder, "order.paid", json!({ "f": i })).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let refused = loop {
        let refused: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM deliveries WHERE project_id = $1 AND response_status = 429",
        )
        .bind(flooder)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if refused > 0 {
            break refused;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the flood was never limited"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    println!("the flooding project's deliveries refused: {refused}");
    // Its own limit, and only its own: another tenant's Redirect and a stranger on the
    // dispatcher's address still land.
    let (status, code, _) = redirect(&app, other, &event).await;
    assert_eq!((status.as_str(), code), ("succeeded", Some(200)));
    let stranger = reqwest::Client::new();
    // A made-up pass is a stranger's header: counted against the address, and kept.
    let forged = format!("v1,{other},{},00", chrono::Utc::now().timestamp());
    let r = stranger
        .post(&bin_url)
        .header("x-posthorn-dispatch", &forged)
        .header("x-request-id", "req_forged")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let newest = &captures(&app, &bin).await[0];
    let headers: Vec<(String, String)> = serde_json::from_value(newest["headers"].clone()).unwrap();
    assert!(headers.contains(&("x-posthorn-dispatch".into(), forged)));
    app.stop().await;
}

#[tokio::test]
async fn redirects_land_when_strangers_filled_their_part_of_the_budget() {
    let app = TestApp::spawn_with(|cfg| {
        cfg.inspector_budget_bytes = 10 * 1024 * 1024;
        cfg.inspector_address_share = 100;
        cfg.inspector_redirect_reserve = 20;
    })
    .await;
    let receiver = Receiver::start().await;
    let (project, event) = project_with_delivered_event(&app, &receiver).await;
    let stranger = reqwest::Client::new();
    let (_, url) = new_bin(&app, &stranger).await;
    let mut statuses = Vec::new();
    for _ in 0..12 {
        let r = stranger
            .post(&url)
            .body(vec![b'a'; 1000 * 1024])
            .send()
            .await;
        statuses.push(r.unwrap().status().as_u16());
        if statuses.last() == Some(&507) {
            break;
        }
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        8,
        "{statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&507));
    let (status, code, bin) = redirect(&app, project, &event).await;
    assert_eq!((status.as_str(), code), ("succeeded", Some(200)));
    assert_eq!(captures(&app, &bin).await.len(), 1);
    app.stop().await;
}
