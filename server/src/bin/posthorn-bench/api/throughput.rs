//! How much goes through: deliveries per second in a fan-out, and events accepted per
//! second by the API.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use super::{
    measure::{statements_report, statements_reset, Writes},
    percentile,
    rig::Rig,
    unix_micros,
};

/// Deliveries per second with `endpoints` endpoints per event, offered at `rate` events/s.
pub async fn fanout(endpoints: usize, rate: u64, seconds: u64, env: Vec<(String, String)>) {
    let rig = Rig::start(&env).await;
    let url = rig.receiver_url("/hook");
    for _ in 0..endpoints {
        rig.endpoint(&rig.key, &url).await;
    }
    let writes = Writes::take(&rig.pool).await;
    let before = rig.cpu();
    let counting = statements_reset(&rig.pool).await;
    let started = unix_micros();
    let (sent, refused) = rig.paced(&rig.key, rate, seconds).await;
    let expected = sent.len() as i64 * endpoints as i64;
    rig.wait_received(expected as u64, Duration::from_secs(120))
        .await;
    // Then the last outcomes' writes, so their CPU counts too.
    rig.wait_for(
        "SELECT count(*) FROM deliveries WHERE status = 'succeeded'",
        |n| n >= expected,
        Duration::from_secs(120),
    )
    .await;
    let after = rig.cpu();
    writes.report(&Writes::take(&rig.pool).await, expected as u64, "delivery");
    Writes::stored(&rig.pool).await;
    statements_report(&rig.pool, counting, expected as u64, "delivery").await;
    let Rig {
        receiver, server, ..
    } = rig;
    drop(server);
    let (_, all) = receiver.finish_times();
    // Receipts per second in 5-second windows; the steady part skips the first 10 s.
    let mut per_window: HashMap<i64, u64> = HashMap::new();
    for at in &all {
        *per_window.entry((at - started) / 5_000_000).or_default() += 1;
    }
    let last = (seconds as i64) / 5;
    let mut steady: Vec<f64> = (2..last)
        .map(|w| *per_window.get(&w).unwrap_or(&0) as f64 / 5.0)
        .collect();
    steady.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let end = all.iter().max().copied().unwrap_or(started);
    println!(
        "{endpoints} endpoints per event, {rate} events/s offered for {seconds} s: {} accepted, {refused} refused",
        sent.len()
    );
    println!(
        "received {} of {expected} deliveries; steady 5-s windows: median {:.0}/s (min {:.0}, max {:.0}); all received after {:.1} s: {:.0}/s end to end",
        all.len(),
        percentile(&steady, 0.5),
        percentile(&steady, 0.0),
        percentile(&steady, 1.0),
        (end - started) as f64 / 1e6,
        all.len() as f64 / ((end - started) as f64 / 1e6)
    );
    before.report(&after, all.len() as u64, "delivery");
}

/// Sets the JSON Schema of `order.paid` through the API.
async fn set_schema(rig: &Rig, schema: &str) {
    let r = rig
        .client
        .put(format!(
            "{}/public/v1/event-types/order.paid/schema",
            rig.server.base
        ))
        .bearer_auth(&rig.key)
        .header("content-type", "application/json")
        .body(schema.to_string())
        .send()
        .await
        .unwrap();
    assert!(
        r.status().is_success(),
        "schema: {}",
        r.text().await.unwrap_or_default()
    );
}

/// `concurrency` clients sending back to back until `until`, `batch` events a request;
/// returns how many events were accepted.
async fn send_closed_loop(rig: &Rig, concurrency: usize, batch: u64, until: Instant) -> u64 {
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..concurrency {
        let (client, base, key) = (rig.client.clone(), rig.server.base.clone(), rig.key.clone());
        tasks.spawn(async move {
            let (mut ok, mut i) = (0u64, c as u64 * 1_000_000_000);
            while Instant::now() < until {
                ok += match batch {
                    1 => Rig::send(&client, &base, &key, i, 0).await.map_or(0, |_| 1),
                    n => Rig::send_batch(&client, &base, &key, i, n).await,
                };
                i += batch;
            }
            ok
        });
    }
    let mut accepted = 0;
    while let Some(n) = tasks.join_next().await {
        accepted += n.unwrap();
    }
    accepted
}

/// What `ingest` sends to.
pub struct Subscribers {
    pub endpoints: usize,
    /// Every endpoint's filter (a CEL expression), if any.
    pub filter: Option<String>,
    /// A JSON Schema set for the events' type (`order.paid`), if any.
    pub schema: Option<String>,
    /// The receiver over HTTP, or a broker the endpoints publish to.
    pub to: super::To,
}

/// Events accepted per second by `POST /public/v1/events` with `concurrency` clients
/// sending back to back (closed loop) to `to.endpoints` endpoints (each with `to.filter`);
/// with `batch` > 1, that many events per `POST /public/v1/events/batch`. Then waits for
/// every delivery, so the CPU figure covers an event's ingest and its deliveries.
pub async fn ingest(
    concurrency: usize,
    seconds: u64,
    batch: u64,
    to: Subscribers,
    env: Vec<(String, String)>,
) {
    let rig = Rig::start(&env).await;
    let url = rig.receiver_url("/hook");
    let broker = (to.to != super::To::Http).then(|| super::brokers::BrokerProcess::start(to.to));
    for _ in 0..to.endpoints.max(1) {
        match &broker {
            None => {
                rig.endpoint_filtered(&rig.key, &url, to.filter.as_deref())
                    .await
            }
            Some(b) => {
                rig.endpoint_to(&rig.key, b.destination(), to.filter.as_deref())
                    .await
            }
        };
    }
    if let Some(schema) = &to.schema {
        set_schema(&rig, schema).await;
    }
    let before = rig.cpu();
    let counting = statements_reset(&rig.pool).await;
    let started = Instant::now();
    let accepted = send_closed_loop(
        &rig,
        concurrency,
        batch,
        started + Duration::from_secs(seconds),
    )
    .await;
    let sending = started.elapsed().as_secs_f64();
    let delivered_then: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE status = 'succeeded'")
            .fetch_one(&rig.pool)
            .await
            .unwrap_or(0);
    // What the filters let through.
    let expected: i64 =
        sqlx::query_scalar("SELECT coalesce(sum(deliveries), 0)::bigint FROM events")
            .fetch_one(&rig.pool)
            .await
            .unwrap_or(0);
    if broker.is_none() {
        rig.wait_received(expected as u64, Duration::from_secs(300))
            .await;
    }
    rig.wait_for(
        "SELECT count(*) FROM deliveries WHERE status = 'succeeded'",
        |n| n >= expected,
        Duration::from_secs(if broker.is_none() { 30 } else { 300 }),
    )
    .await;
    let all_delivered = started.elapsed().as_secs_f64();
    let published: i64 =
        sqlx::query_scalar("SELECT count(*) FROM deliveries WHERE status = 'succeeded'")
            .fetch_one(&rig.pool)
            .await
            .unwrap_or(0);
    let after = rig.cpu();
    statements_report(&rig.pool, counting, accepted, "event").await;
    let Rig {
        receiver, server, ..
    } = rig;
    drop(server);
    let (received, _) = receiver.finish_times();
    // A broker's consumer is not this process: what it acknowledged is what was delivered.
    let received = if broker.is_some() {
        published as usize
    } else {
        received
    };
    drop(broker);
    println!(
        "{concurrency} clients, {batch} event(s) per request, {} endpoint(s) ({:?}), filter {:?}, schema {}, for {seconds} s: {accepted} events accepted ({:.0}/s); {delivered_then} delivered by then; all {received} delivered after {all_delivered:.1} s ({:.0}/s end to end)",
        to.endpoints,
        to.to,
        to.filter,
        if to.schema.is_some() { "set" } else { "none" },
        accepted as f64 / sending,
        received as f64 / all_delivered,
    );
    before.report(&after, accepted, "event (ingest and its delivery)");
}
