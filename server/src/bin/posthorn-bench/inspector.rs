//! Inspector captures per second into one bin, over HTTP on loopback.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use crate::{scratch_db, serve_app};

/// `concurrency` keep-alive clients POST a small JSON body to one bin for `seconds`.
pub async fn capture(seconds: u64, concurrency: usize) {
    let (pool, url) = scratch_db().await;
    std::env::set_var("POSTHORN_CAPTURE_RATE_LIMIT", "100000000");
    let addr = serve_app(&pool, &url).await;
    let http = reqwest::Client::new();
    let bin: serde_json::Value = http
        .post(format!("http://{addr}/inspector/bins"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let target = format!("http://{addr}/r/{}/hook", bin["id"].as_str().unwrap());
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let body = r#"{"event_id":"evt_01JD0000000000000000000000","event":"payment.succeeded","data":{"amount":4200}}"#;
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (http, target, count) = (http.clone(), target.clone(), count.clone());
        tasks.push(tokio::spawn(async move {
            while start.elapsed() < Duration::from_secs(seconds) {
                let r = http
                    .post(&target)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let n = count.load(Ordering::Relaxed);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM bin_requests")
        .fetch_one(&pool)
        .await
        .unwrap();
    println!("{concurrency} concurrent clients, {seconds} s: {n} captures = {:.0} requests/s into one bin ({stored} kept: the newest 500)", n as f64 / start.elapsed().as_secs_f64());
}
