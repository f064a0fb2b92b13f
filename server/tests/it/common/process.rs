//! `posthorn` as a process of its own, for tests that kill, restart or re-key it.

use std::{
    process::{Child, Command},
    time::{Duration, Instant},
};

/// A port free at the moment of asking.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `cmd` (a `posthorn serve` told to listen at `base`) and waits until it answers.
pub async fn started(cmd: &mut Command, base: &str) -> Child {
    let child = cmd.spawn().expect("start posthorn serve");
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    child
}
