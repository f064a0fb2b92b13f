//! Broker destinations through the public API against real Redis and NATS servers (private
//! ones, started per test): what is published verifies with the Python SDK, settings are
//! read back without credentials, a lasting refusal dead-letters at once, a broken
//! connection is retried and then delivered, ordering keys hold, and a Retry publishes
//! again with a new request id.

pub(crate) mod brokers;

use std::time::Duration;

use crate::common::{self, api_calls::Api, TestApp};
use brokers::{consume, Broker, Subscription};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A project and an endpoint publishing to `destination`: (API, endpoint, secret).
async fn endpoint(app: &TestApp, destination: Value) -> (Api, Value, String) {
    let (_, key) = app.project("business").await;
    let api = Api::new(app, &key);
    let (status, _, ep) = api
        .send(
            "POST",
            "/webhooks",
            Some(json!({"events": ["*"], "destination": destination})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{ep}");
    let secret = ep["secret"].as_str().unwrap().to_string();
    (api, ep, secret)
}

async fn event(api: &Api, data: Value) -> String {
    let (status, _, body) = api
        .send(
            "POST",
            "/events",
            Some(json!({"event": "order.paid", "data": data})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    body["id"].as_str().unwrap().to_string()
}

/// Waits until one of the event's attempts has failed.
async fn failed_once(app: &TestApp, event_id: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !app.attempts(event_id).await.iter().any(|a| a.1 == "failed") {
        assert!(tokio::time::Instant::now() < deadline, "no failed attempt");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Each of `keys` keys' events (`n % keys`) arrived in the order sent.
fn in_key_order(got: &[Value], keys: i64) {
    for key in 0..keys {
        let seen: Vec<i64> = got
            .iter()
            .map(|m| m["body"]["data"]["n"].as_i64().unwrap())
            .filter(|n| n % keys == key)
            .collect();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "key-{key}: {seen:?}");
    }
}

/// The event's first attempt, read by id (the list leaves out the answer's body).
async fn delivery(api: &Api, event_id: &str) -> Value {
    let (_, _, list) = api
        .send("GET", &format!("/deliveries?event_id={event_id}"), None)
        .await;
    let id = &list["data"][0]["id"];
    api.send("GET", &format!("/deliveries/{id}"), None).await.2
}

fn header<'a>(message: &'a Value, name: &str) -> &'a str {
    message["headers"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} in {message}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_gets_a_verifiable_entry_and_a_retry_publishes_again() {
    let redis = Broker::redis(Some("s3cret pass"));
    let app = TestApp::spawn().await;
    let url = format!("redis://:s3cret%20pass@127.0.0.1:{}/0", redis.port);
    let (api, ep, secret) = endpoint(
        &app,
        json!({"type": "redis", "url": url, "stream": "orders"}),
    )
    .await;
    // Settings come back, the credentials never do.
    let target = format!("redis://127.0.0.1:{}/0", redis.port);
    assert_eq!(
        ep["destination"],
        json!({"type": "redis", "name": null, "connected": false, "url": target, "stream": "orders", "maxlen": 100000, "credentials_set": true})
    );
    assert!(!ep.to_string().contains("s3cret"), "{ep}");
    assert_eq!(ep["url"], format!("{target} stream=orders"));

    let id = event(&api, json!({"amount": 42, "note": "<b>hi</b>"})).await;
    let attempts = app.settled(&id, Duration::from_secs(20)).await;
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!((attempts[0].1.as_str(), attempts[0].2), ("succeeded", None));
    let redis_url = format!("redis://:s3cret%20pass@127.0.0.1:{}/0", redis.port);
    let got = consume(&["redis", &redis_url, "orders", &secret, "1"]).await;
    assert_eq!(got.len(), 1);
    assert_eq!(header(&got[0], "webhook-id"), id);
    assert_eq!(header(&got[0], "x-event-type"), "order.paid");
    assert_eq!(
        got[0]["body"]["data"],
        json!({"amount": 42, "note": "<b>hi</b>"})
    );
    let first_request = header(&got[0], "x-request-id").to_string();

    // The attempt log: where it went (no credentials) and the broker's answer.
    let d = delivery(&api, &id).await;
    assert_eq!(d["target_url"], format!("{target} stream=orders"));
    assert!(
        d["response_body"].as_str().unwrap_or("").contains("entry"),
        "{d}"
    );

    // Retry: published again, same event, a new request id.
    let (status, _, retried) = api
        .send("POST", &format!("/deliveries/{}/retry", d["id"]), None)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{retried}");
    let got = consume(&["redis", &redis_url, "orders", &secret, "2"]).await;
    assert_eq!(got.len(), 2);
    assert_eq!(header(&got[1], "webhook-id"), id);
    assert_ne!(header(&got[1], "x-request-id"), first_request);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nats_gets_a_verifiable_message_deduplicated_by_request_id() {
    let nats = Broker::nats();
    let url = format!("nats://127.0.0.1:{}", nats.port);
    assert_eq!(
        consume(&["nats-stream", &url, "ORDERS", "orders.>"])
            .await
            .len(),
        0
    );
    let app = TestApp::spawn().await;
    let (api, ep, secret) = endpoint(
        &app,
        json!({"type": "nats", "url": url, "subject": "orders.paid"}),
    )
    .await;
    assert_eq!(ep["destination"]["credentials_set"], false);
    let id = event(&api, json!({"amount": 7})).await;
    let attempts = app.settled(&id, Duration::from_secs(20)).await;
    assert_eq!(attempts.last().unwrap().1, "succeeded", "{attempts:?}");
    let got = consume(&["nats", &url, "ORDERS", &secret, "1"]).await;
    assert_eq!(header(&got[0], "webhook-id"), id);
    assert_eq!(
        header(&got[0], "Nats-Msg-Id"),
        header(&got[0], "x-request-id")
    );
    assert_eq!(got[0]["body"]["data"], json!({"amount": 7}));

    let d = delivery(&api, &id).await;
    assert!(
        d["response_body"]
            .as_str()
            .unwrap()
            .contains("stream ORDERS, sequence 1"),
        "{d}"
    );
    api.send("POST", &format!("/deliveries/{}/retry", d["id"]), None)
        .await;
    let got = consume(&["nats", &url, "ORDERS", &secret, "2"]).await;
    assert_ne!(
        header(&got[1], "x-request-id"),
        header(&got[0], "x-request-id")
    );

    // A subject no stream takes is a lasting refusal.
    let (api, _, _) = endpoint(
        &app,
        json!({"type": "nats", "url": url, "subject": "invoices.paid"}),
    )
    .await;
    let id = event(&api, json!({})).await;
    let attempts = app.settled(&id, Duration::from_secs(20)).await;
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(
        (attempts[0].1.as_str(), attempts[0].3.as_deref()),
        ("dead_letter", Some("refused"))
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refusal_dead_letters_at_once_and_a_broken_connection_is_retried() {
    let mut redis = Broker::redis(Some("right"));
    let app = TestApp::spawn_with(common::ordering::with_retry("1s,1s,1s,1s,1s,1s")).await;
    let wrong = format!("redis://:wrong@127.0.0.1:{}", redis.port);
    let (api, _, _) = endpoint(&app, json!({"type": "redis", "url": wrong, "stream": "s"})).await;
    let id = event(&api, json!({})).await;
    let attempts = app.settled(&id, Duration::from_secs(20)).await;
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(
        (attempts[0].1.as_str(), attempts[0].3.as_deref()),
        ("dead_letter", Some("refused"))
    );
    let d = delivery(&api, &id).await;
    assert!(d["error"].as_str().unwrap().contains("WRONGPASS"), "{d}");

    // Delivered once (its connection kept), then the server goes away and comes back.
    let right = format!("redis://:right@127.0.0.1:{}", redis.port);
    let (api, _, secret) =
        endpoint(&app, json!({"type": "redis", "url": right, "stream": "s"})).await;
    let first = event(&api, json!({"n": 1})).await;
    app.settled(&first, Duration::from_secs(20)).await;
    redis.stop();
    let second = event(&api, json!({"n": 2})).await;
    failed_once(&app, &second).await;
    redis.start();
    let attempts = app.settled(&second, Duration::from_secs(20)).await;
    assert_eq!(attempts.last().unwrap().1, "succeeded", "{attempts:?}");
    assert_eq!(attempts[0].3.as_deref(), Some("connect"), "{attempts:?}");
    // The new server has only what came after its start.
    let got = consume(&["redis", &right, "s", &secret, "1"]).await;
    assert_eq!(header(&got[0], "webhook-id"), second);
    // A kept connection the server closed is replaced on the spot.
    let third = event(&api, json!({"n": 3})).await;
    let attempts = app.settled(&third, Duration::from_secs(20)).await;
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ordering_keys_hold_across_100_keyed_events() {
    let redis = Broker::redis(None);
    let app = TestApp::spawn().await;
    let url = format!("redis://127.0.0.1:{}", redis.port);
    let (api, _, secret) =
        endpoint(&app, json!({"type": "redis", "url": url, "stream": "k"})).await;
    let events: Vec<Value> = (0..100)
        .map(|n| json!({"event": "order.updated", "data": {"n": n}, "ordering_key": format!("key-{}", n % 5)}))
        .collect();
    let (status, _, body) = api
        .send("POST", "/events/batch", Some(json!({ "events": events })))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let got = consume(&["redis", &url, "k", &secret, "100"]).await;
    assert_eq!(got.len(), 100);
    for key in 0..5 {
        let seen: Vec<i64> = got
            .iter()
            .map(|m| m["body"]["data"]["n"].as_i64().unwrap())
            .filter(|n| n % 5 == key)
            .collect();
        let sorted = {
            let mut s = seen.clone();
            s.sort();
            s
        };
        assert_eq!(seen, sorted, "key-{key} out of order");
        assert_eq!(seen.len(), 20);
    }
    app.stop().await;
}

#[tokio::test]
async fn destinations_are_checked_when_saved() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let api = Api::new(&app, &key);
    for (body, words) in [
        (
            json!({"events": ["*"]}),
            "`url` (an HTTP endpoint) or `destination` is required",
        ),
        (
            json!({"events": ["*"], "url": "https://x.example", "destination": {"type": "nats"}}),
            "not both",
        ),
        (
            json!({"events": ["*"], "destination": {"type": "redis", "url": "redis://h"}}),
            "`destination.stream` is required",
        ),
        (
            json!({"events": ["*"], "destination": {"type": "sqs", "queue_url": "q"}}),
            "not available on this server yet",
        ),
    ] {
        let (status, _, answer) = api.send("POST", "/webhooks", Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert!(
            answer["error"]["message"].as_str().unwrap().contains(words),
            "{answer}"
        );
    }
    // The type never changes; the settings may, credentials kept when left out.
    let (_, _, ep) = api
        .send("POST", "/webhooks", Some(json!({"events": ["*"], "destination": {"type": "redis", "url": "redis://:pw@10.1.2.3", "stream": "a"}})))
        .await;
    let path = format!("/webhooks/{}", ep["id"]);
    let (status, _, answer) = api
        .send("PATCH", &path, Some(json!({"url": "https://x.example"})))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("does not change"));
    let (status, _, answer) = api
        .send(
            "PATCH",
            &path,
            Some(
                json!({"destination": {"type": "redis", "url": "redis://10.1.2.3", "stream": "b"}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["destination"]["stream"], "b");
    assert_eq!(answer["destination"]["credentials_set"], true);
    let (_, _, http) = api
        .send("POST", "/webhooks", Some(json!({"events": ["*"], "destination": {"type": "http", "url": "https://x.example/h"}})))
        .await;
    assert_eq!(http["url"], "https://x.example/h");
    assert!(http.get("destination").is_none());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mqtt_gets_verifiable_messages_in_key_order_and_refusals_dead_letter() {
    let mut mqtt = Broker::mosquitto(Some(("shop", "pw")));
    let app = TestApp::spawn_with(common::ordering::with_retry("2s,2s,2s,2s,2s,2s")).await;
    let port = mqtt.port.to_string();
    let url = format!("mqtt://shop:pw@127.0.0.1:{port}");
    let (api, ep, secret) = endpoint(
        &app,
        json!({"type": "mqtt", "url": url, "topic": "shop/orders"}),
    )
    .await;
    assert_eq!(ep["destination"]["topic"], "shop/orders");
    assert_eq!(ep["destination"]["qos"], 1);
    assert_eq!(ep["destination"]["credentials_set"], true);

    // 100 keyed events, one key's in the order sent, each verified by the consumer.
    let listening =
        Subscription::start(&["mqtt", &port, "shop/orders", &secret, "100", "shop", "pw"]);
    let events: Vec<Value> = (0..100)
        .map(|n| json!({"event": "order.updated", "data": {"n": n}, "ordering_key": format!("key-{}", n % 4)}))
        .collect();
    let (status, _, body) = api
        .send("POST", "/events/batch", Some(json!({ "events": events })))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let got = listening.finish().await;
    assert_eq!(got.len(), 100);
    in_key_order(&got, 4);
    let first = got[0]["body"]["event_id"].as_str().unwrap().to_string();
    let d = delivery(&api, &first).await;
    assert!(
        d["response_body"].as_str().unwrap().contains("PUBACK"),
        "{d}"
    );

    // Retry: published again with a new request id.
    let listening =
        Subscription::start(&["mqtt", &port, "shop/orders", &secret, "1", "shop", "pw"]);
    api.send("POST", &format!("/deliveries/{}/retry", d["id"]), None)
        .await;
    let again = listening.finish().await;
    assert_eq!(header(&again[0], "webhook-id"), first);
    assert_ne!(
        header(&again[0], "x-request-id"),
        d["request_id"].as_str().unwrap()
    );

    // A broker that takes anyone: no credentials sent, and QoS 0.
    let open = Broker::mosquitto(None);
    let anyone = format!("mqtt://127.0.0.1:{}", open.port);
    let (free, _, free_secret) = endpoint(
        &app,
        json!({"type": "mqtt", "url": anyone, "topic": "t", "qos": 0}),
    )
    .await;
    let listening = Subscription::start(&["mqtt", &open.port.to_string(), "t", &free_secret, "1"]);
    let id = event(&free, json!({"qos": 0})).await;
    assert_eq!(header(&listening.finish().await[0], "webhook-id"), id);

    // Wrong credentials: a dead letter at once.
    let wrong = format!("mqtt://shop:nope@127.0.0.1:{port}");
    let (bad, _, _) = endpoint(&app, json!({"type": "mqtt", "url": wrong, "topic": "t"})).await;
    let id = event(&bad, json!({})).await;
    let attempts = app.settled(&id, Duration::from_secs(20)).await;
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0].3.as_deref(), Some("refused"), "{attempts:?}");

    // The broker goes away: retried, then delivered once it is back.
    mqtt.stop();
    let id = event(&api, json!({"n": "after"})).await;
    failed_once(&app, &id).await;
    mqtt.start();
    let listening =
        Subscription::start(&["mqtt", &port, "shop/orders", &secret, "1", "shop", "pw"]);
    let got = listening.finish().await;
    assert_eq!(header(&got[0], "webhook-id"), id);
    let attempts = app.settled(&id, Duration::from_secs(20)).await;
    assert_eq!(attempts.last().unwrap().1, "succeeded", "{attempts:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rabbitmq_confirms_publishes_and_refuses_what_no_queue_takes() {
    let mut mq = Broker::rabbitmq();
    let amqp = format!("amqp://guest:guest@127.0.0.1:{}/%2f", mq.port);
    consume(&["amqp-queue", &amqp, "orders"]).await;
    let app = TestApp::spawn_with(common::ordering::with_retry("3s,3s,3s,3s,3s,3s,3s,3s")).await;
    let (api, ep, secret) = endpoint(
        &app,
        json!({"type": "rabbitmq", "url": amqp, "routing_key": "orders"}),
    )
    .await;
    assert_eq!(
        (
            &ep["destination"]["exchange"],
            &ep["destination"]["routing_key"]
        ),
        (&json!(""), &json!("orders"))
    );
    assert!(!ep.to_string().contains("guest:guest"), "{ep}");

    // 100 keyed events, each key's in order, each verified by a pika consumer.
    let events: Vec<Value> = (0..100)
        .map(|n| json!({"event": "order.updated", "data": {"n": n}, "ordering_key": format!("key-{}", n % 5)}))
        .collect();
    let (status, _, body) = api
        .send("POST", "/events/batch", Some(json!({ "events": events })))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let got = consume(&["amqp", &amqp, "orders", &secret, "100"]).await;
    assert_eq!(got.len(), 100);
    in_key_order(&got, 5);
    assert_eq!(
        header(&got[0], "message-id"),
        header(&got[0], "x-request-id")
    );
    let first = got[0]["body"]["event_id"].as_str().unwrap().to_string();
    let d = delivery(&api, &first).await;
    assert!(
        d["response_body"].as_str().unwrap().contains("basic.ack"),
        "{d}"
    );
    api.send("POST", &format!("/deliveries/{}/retry", d["id"]), None)
        .await;
    let again = consume(&["amqp", &amqp, "orders", &secret, "1"]).await;
    assert_eq!(header(&again[0], "webhook-id"), first);
    assert_ne!(
        header(&again[0], "x-request-id"),
        d["request_id"].as_str().unwrap()
    );

    // Lasting refusals: no queue takes it, no such exchange, wrong password.
    let wrong = format!("amqp://guest:nope@127.0.0.1:{}/%2f", mq.port);
    for (destination, words) in [
        (
            json!({"type": "rabbitmq", "url": amqp, "routing_key": "nobody"}),
            "no queue took",
        ),
        (
            json!({"type": "rabbitmq", "url": amqp, "exchange": "nope", "routing_key": "x"}),
            "404 NOT_FOUND",
        ),
        (
            json!({"type": "rabbitmq", "url": wrong, "routing_key": "orders"}),
            "403 ACCESS_REFUSED",
        ),
    ] {
        let (api, _, _) = endpoint(&app, destination).await;
        let id = event(&api, json!({})).await;
        let attempts = app.settled(&id, Duration::from_secs(20)).await;
        assert_eq!(attempts.len(), 1, "{attempts:?}");
        assert_eq!(attempts[0].3.as_deref(), Some("refused"), "{attempts:?}");
        let d = delivery(&api, &id).await;
        assert!(d["error"].as_str().unwrap().contains(words), "{d}");
    }

    // The broker goes away: retried, then delivered once it is back.
    mq.stop();
    let id = event(&api, json!({"n": "after"})).await;
    failed_once(&app, &id).await;
    mq.start();
    let attempts = app.settled(&id, Duration::from_secs(40)).await;
    assert_eq!(attempts.last().unwrap().1, "succeeded", "{attempts:?}");
    let got = consume(&["amqp", &amqp, "orders", &secret, "1"]).await;
    assert_eq!(header(&got[0], "webhook-id"), id);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nats_keeps_each_keys_order_and_delivers_after_a_restart() {
    let mut nats = Broker::nats();
    let url = format!("nats://127.0.0.1:{}", nats.port);
    consume(&["nats-stream", &url, "KEYED", "keyed.>"]).await;
    let app = TestApp::spawn_with(common::ordering::with_retry("1s,1s,1s,1s,1s,1s,1s,1s")).await;
    let (api, _, secret) = endpoint(
        &app,
        json!({"type": "nats", "url": url, "subject": "keyed.orders"}),
    )
    .await;
    let events: Vec<Value> = (0..100)
        .map(|n| json!({"event": "order.updated", "data": {"n": n}, "ordering_key": format!("key-{}", n % 5)}))
        .collect();
    let (status, _, body) = api
        .send("POST", "/events/batch", Some(json!({ "events": events })))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let got = consume(&["nats", &url, "KEYED", &secret, "100"]).await;
    assert_eq!(got.len(), 100);
    in_key_order(&got, 5);

    // The server goes away: retried, then delivered once it is back (its stream kept).
    nats.stop();
    let id = event(&api, json!({"n": "after"})).await;
    failed_once(&app, &id).await;
    nats.start();
    let attempts = app.settled(&id, Duration::from_secs(30)).await;
    assert_eq!(attempts.last().unwrap().1, "succeeded", "{attempts:?}");
    let got = consume(&["nats", &url, "KEYED", &secret, "101"]).await;
    assert_eq!(header(&got[100], "webhook-id"), id);
    app.stop().await;
}
