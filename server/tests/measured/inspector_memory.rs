//! The inspector cannot exhaust the machine: twenty clients reading a full bin at once
//! are all answered, and the server process stays small. Measured on a real `posthorn
//! serve` process (its peak resident size, from /proc).

use crate::common;

use std::{
    process::{Command, Stdio},
    time::Instant,
};

use common::TestDb;

fn peak_resident_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_readers_of_a_full_bin_keep_the_server_small() {
    let _alone = crate::solo().await;
    let db = TestDb::new().await;
    let port = common::process::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = common::process::started(
        Command::new(env!("CARGO_BIN_EXE_posthorn"))
            .arg("serve")
            .env("DATABASE_URL", &db.url)
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .env("POSTHORN_PUBLIC_URL", &base)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        &base,
    )
    .await;
    let http = reqwest::Client::new();
    let bin: serde_json::Value = http
        .post(format!("{base}/inspector/bins"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (id, url) = (bin["id"].as_str().unwrap(), bin["url"].as_str().unwrap());
    // A full bin: its 64 MiB quota of 1 MiB captures.
    let body = vec![b'x'; 1024 * 1024];
    for _ in 0..70 {
        let r = http.post(url).body(body.clone()).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }
    let before = peak_resident_mib(server.id());
    let started = Instant::now();
    let readers = (0..20).map(|_| {
        let http = http.clone();
        let list = format!("{base}/inspector/bins/{id}/requests?limit=100");
        async move {
            let r = http.get(list).send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.bytes().await.unwrap().len())
        }
    });
    let answers = futures::future::join_all(readers).await;
    let took = started.elapsed();
    let peak = peak_resident_mib(server.id());
    let _ = server.kill();
    let _ = server.wait();
    let largest = answers.iter().map(|a| a.1).max().unwrap();
    println!(
        "20 parallel reads of a full bin: all {:?}, largest response {:.1} MiB, in {took:?}; \
         server peak resident {before} MiB before, {peak} MiB after",
        answers
            .iter()
            .map(|a| a.0)
            .collect::<std::collections::BTreeSet<_>>(),
        largest as f64 / 1048576.0
    );
    assert!(answers.iter().all(|a| a.0 == 200));
    assert!(largest < 16 * 1024 * 1024);
    assert!(peak < 512, "peak resident {peak} MiB");
}
