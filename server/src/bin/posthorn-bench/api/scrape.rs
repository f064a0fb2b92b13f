//! One `/metrics` scrape beside a deep queue: what a Prometheus scraping the server costs
//! it and the database when a million attempts wait.

use std::time::{Duration, Instant};

use super::{latency::make_backlog, percentile, rig::Rig, Backlog};

/// The queue's depth in a `/metrics` text, once the dispatcher has counted it.
fn depth(text: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.strip_prefix("posthorn_queue_depth "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as i64)
}

async fn body(rig: &Rig, url: &str) -> String {
    let answer = rig.client.get(url).send().await.unwrap();
    answer.text().await.unwrap()
}

pub async fn scrape(rows: i64, scrapes: u64, env: Vec<(String, String)>) {
    let rig = Rig::start(&env).await;
    make_backlog(&rig, Backlog::Deep, rows).await;
    let url = format!("{}/metrics", rig.server.base);
    // The dispatcher counts the due queue every 15 s: wait for a count that sees it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let seen = loop {
        let text = body(&rig, &url).await;
        match depth(&text) {
            Some(d) if d >= rows / 2 => break d,
            _ if Instant::now() > deadline => panic!("no queue count of the backlog in 60 s"),
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    let before = rig.cpu();
    let mut lat = Vec::with_capacity(scrapes as usize);
    let mut bytes = 0;
    for _ in 0..scrapes {
        let started = Instant::now();
        let text = body(&rig, &url).await;
        lat.push(started.elapsed().as_secs_f64() * 1000.0);
        bytes = text.len();
    }
    let after = rig.cpu();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{scrapes} scrapes of /metrics beside {seen} due attempts ({bytes} bytes each): p50 {:.3} ms, p99 {:.3} ms",
        percentile(&lat, 0.50),
        percentile(&lat, 0.99)
    );
    before.report(&after, scrapes, "scrape");
    // What every scrape ran before the dispatcher sampled the queue: the count itself.
    let mut counts = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        app::db::queue::queue_stats(&rig.pool).await.unwrap();
        counts.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    counts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "the queue count (once per 15 s per dispatcher now; once per scrape before): median {:.1} ms",
        percentile(&counts, 0.5)
    );
}
