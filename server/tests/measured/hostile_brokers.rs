//! Hostile brokers: an endpoint whose Redis or NATS server hangs, answers slowly, sends a
//! line without an end or a frame of a gigabyte, or closes at once holds its own share
//! only. Another project's HTTP endpoint is measured alone and beside them.

use std::time::Duration;

use crate::common::*;
use crate::hostile::{healthy_latencies, hostile_config, percentile, ONE_AT_A_TIME};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// Accepts the connection and never says a word (a NATS client waits for INFO).
    Silent,
    /// A Redis that reads the command and answers after 10 s.
    SlowAck,
    /// An answer line that never ends.
    EndlessLine,
    /// A bulk reply announcing a gigabyte.
    HugeFrame,
    /// Closes every connection at once.
    Closes,
}

const ALL: [Hostile; 5] = [
    Hostile::Silent,
    Hostile::SlowAck,
    Hostile::EndlessLine,
    Hostile::HugeFrame,
    Hostile::Closes,
];

async fn hostile_broker(kind: Hostile) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(kind, socket));
        }
    });
    port
}

async fn answer(kind: Hostile, mut socket: TcpStream) {
    let mut buf = vec![0u8; 16 * 1024];
    let _ = async {
        match kind {
            Hostile::Silent => tokio::time::sleep(Duration::from_secs(3600)).await,
            Hostile::Closes => {}
            Hostile::SlowAck => {
                let _request = socket.read(&mut buf).await?;
                tokio::time::sleep(Duration::from_secs(10)).await;
                socket.write_all(b"$3\r\n1-0\r\n").await?;
            }
            Hostile::EndlessLine => {
                let _request = socket.read(&mut buf).await?;
                let chunk = vec![b'x'; 16 * 1024];
                loop {
                    socket.write_all(&chunk).await?;
                }
            }
            Hostile::HugeFrame => {
                let _request = socket.read(&mut buf).await?;
                socket.write_all(b"$1000000000\r\n").await?;
                let chunk = vec![b'y'; 16 * 1024];
                loop {
                    socket.write_all(&chunk).await?;
                }
            }
        }
        Ok::<_, std::io::Error>(())
    }
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_brokers_neither_stop_nor_slow_another_project() {
    let _alone = crate::shared().await;
    let _turn = ONE_AT_A_TIME.lock().await;
    let app = TestApp::spawn_with(hostile_config).await;
    let (healthy, _) = app.project("business").await;
    let receiver = Receiver::start().await;
    app.endpoint(healthy, &receiver.url).await;
    healthy_latencies(&app, healthy, &receiver, 20, 50).await;
    let quiet = healthy_latencies(&app, healthy, &receiver, 200, 40).await;

    // One hostile project: four Redis and two each of NATS, MQTT and RabbitMQ endpoints of
    // every kind.
    let (hostile, key) = app.project("business").await;
    for kind in ALL {
        let port = hostile_broker(kind).await;
        for i in 0..10 {
            let destination = if i < 4 {
                serde_json::json!({"type": "redis", "url": format!("redis://127.0.0.1:{port}"), "stream": "s"})
            } else if i >= 8 {
                serde_json::json!({"type": "rabbitmq", "url": format!("amqp://127.0.0.1:{port}"), "routing_key": "q"})
            } else if i >= 6 {
                serde_json::json!({"type": "mqtt", "url": format!("mqtt://127.0.0.1:{port}"), "topic": "t"})
            } else {
                serde_json::json!({"type": "nats", "url": format!("nats://127.0.0.1:{port}"), "subject": "s"})
            };
            let (status, body) = app
                .api(
                    &key,
                    reqwest::Method::POST,
                    "/webhooks",
                    serde_json::json!({"events": ["*"], "destination": destination}),
                )
                .await;
            assert_eq!(status, 201, "{body}");
        }
    }
    for i in 0..40 {
        app.ingest(hostile, "order.paid", serde_json::json!({ "h": i }))
            .await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let busy = healthy_latencies(&app, healthy, &receiver, 200, 40).await;
    println!(
        "healthy project, 200 events at 40/s: p50 {:.1} ms / p99 {:.1} ms alone; p50 {:.1} ms / p99 {:.1} ms beside 50 hostile broker endpoints",
        percentile(&quiet, 0.5),
        percentile(&quiet, 0.99),
        percentile(&busy, 0.5),
        percentile(&busy, 0.99)
    );
    assert!(
        percentile(&busy, 0.5) < percentile(&quiet, 0.5) + 50.0,
        "median latency beside hostile brokers"
    );
    assert!(
        percentile(&busy, 0.99) < 1000.0,
        "p99 beside hostile brokers"
    );

    // Every hostile attempt ends, none succeeds, and each says why in its kind.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let ended: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT status, error_kind, error FROM deliveries
         WHERE project_id = $1 AND status NOT IN ('pending', 'in_flight')",
    )
    .bind(hostile)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(!ended.is_empty());
    assert!(ended.iter().all(|(s, _, _)| s != "succeeded"), "{ended:?}");
    let said = |words: &str| {
        ended
            .iter()
            .any(|(_, _, e)| e.as_deref().is_some_and(|e| e.contains(words)))
    };
    assert!(said("longer than"), "an endless line is cut: {ended:?}");
    assert!(
        said("1000000000 bytes"),
        "a huge frame is refused: {ended:?}"
    );
    assert!(
        ended
            .iter()
            .any(|(_, k, _)| k.as_deref() == Some("timeout")),
        "a silent broker times out: {ended:?}"
    );
    app.stop().await;
}
