//! A hostile neighbour for the latency benchmark: another project whose definitions cost
//! the most this server accepts, sending events that meet them back to back.
//!
//! - a schema on `order.paid` whose items are each tried against 990 alternatives (the
//!   most terms per value allowed), and events whose arrays bring each check to the
//!   budget (accepted, after the full check);
//! - 500 endpoints, each with a filter of two patterns, a search and joins (the most a
//!   filter may hold), and `order.note` events with ~250 KB of strings those patterns
//!   scan; the filters keep every event out, so what the neighbour costs is the checking.

use std::time::{Duration, Instant};

use serde_json::json;

use super::rig::Rig;

const ENDPOINTS: usize = 500;
const SENDERS: usize = 4;
const FILTER: &str = r#"data.note.matches('^([a-z]+ )*[A-Z]{3}-[0-9]{6}$') && data.ref.matches('(alpha|beta|gamma|delta)[0-9]+x$') && data.note.contains(data.ref) && data.ref + data.note != data.note + data.ref"#;

/// Sets the neighbour up through the API; returns its key.
pub async fn setup(rig: &Rig) -> String {
    let started = Instant::now();
    let key = Rig::project(&rig.db_url);
    let alternatives: Vec<_> = (0..990)
        .map(|i| json!({"const": format!("v{i}")}))
        .collect();
    let schema = json!({"type": "object", "properties": {
        "lines": {"type": "array", "items": {"anyOf": alternatives}}}});
    let r = rig
        .client
        .put(format!(
            "{}/public/v1/event-types/order.paid/schema",
            rig.server.base
        ))
        .bearer_auth(&key)
        .json(&schema)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "schema: {}", r.status());
    let url = rig.receiver_url("/costly");
    for _ in 0..ENDPOINTS {
        rig.endpoint_filtered(&key, &url, Some(FILTER)).await;
    }
    println!(
        "neighbour: a project with the costliest schema and {ENDPOINTS} endpoints with the costliest filter, made in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    key
}

/// Sends the two kinds of costly events, alternating, from [`SENDERS`] clients for
/// `seconds`; prints what they were answered.
pub async fn send(client: reqwest::Client, base: String, key: String, seconds: u64) {
    let schema_event =
        json!({"event": "order.paid", "data": {"lines": vec!["v989"; 1_900]}}).to_string();
    let filter_event = json!({"event": "order.note", "data": {
        "note": "abc ".repeat(30_000), "ref": "b".repeat(120_000)}})
    .to_string();
    let until = Instant::now() + Duration::from_secs(seconds);
    let senders = (0..SENDERS).map(|s| {
        let (client, base, key) = (client.clone(), base.clone(), key.clone());
        let bodies = [schema_event.clone(), filter_event.clone()];
        async move {
            let mut answered: Vec<(u16, u128)> = Vec::new();
            let mut i = s;
            while Instant::now() < until {
                let t = Instant::now();
                let status = client
                    .post(format!("{base}/public/v1/events"))
                    .bearer_auth(&key)
                    .header("content-type", "application/json")
                    .body(bodies[i % 2].clone())
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0);
                answered.push((status, t.elapsed().as_millis()));
                i += 1;
            }
            answered
        }
    });
    let all: Vec<(u16, u128)> = futures::future::join_all(senders)
        .await
        .into_iter()
        .flatten()
        .collect();
    let mut statuses = std::collections::BTreeMap::new();
    for (s, _) in &all {
        *statuses.entry(*s).or_insert(0) += 1;
    }
    let mut times: Vec<u128> = all.iter().map(|(_, t)| *t).collect();
    times.sort();
    println!(
        "neighbour: {} costly events answered {statuses:?}; answer time p50 {} ms, max {} ms",
        all.len(),
        times.get(times.len() / 2).unwrap_or(&0),
        times.last().unwrap_or(&0)
    );
}
