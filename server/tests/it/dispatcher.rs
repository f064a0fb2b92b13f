//! The dispatcher against real receivers on loopback: one test per outcome class.

use crate::common;
use app::core::{EndpointId, ProjectId};

use std::time::{Duration, Instant};

use common::{header, Answer, Receiver, TestApp};
use hmac::{Hmac, Mac};
use sha2::Sha256;

const SETTLE: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_2xx_succeeds_once_with_every_documented_header() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let (project, _) = app.project("trial").await;
    let (_, secret) = app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(
            project,
            "payment.succeeded",
            serde_json::json!({"amount": 5}),
        )
        .await;

    let attempts = app.settled(&event_id, SETTLE).await;
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        (attempts[0].1.as_str(), attempts[0].2),
        ("succeeded", Some(200))
    );
    let seen = rx.seen();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!(header(r, "content-type"), "application/json");
    assert_eq!(header(r, "x-event-id"), event_id);
    assert_eq!(header(r, "x-event-type"), "payment.succeeded");
    assert_eq!(header(r, "x-delivery-attempt"), "1");
    assert_eq!(header(r, "x-request-id"), attempts[0].4);
    assert_eq!(header(r, "webhook-id"), event_id);
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["event_id"], event_id.as_str());
    assert_eq!(body["event"], "payment.succeeded");
    assert_eq!(body["data"]["amount"], 5);

    // X-Botix-Signature checked with a reference HMAC written here, not the product's.
    let ts = header(r, "x-botix-timestamp");
    assert!((chrono::Utc::now().timestamp() - ts.parse::<i64>().unwrap()).abs() < 60);
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{ts}.").as_bytes());
    mac.update(&r.body);
    assert_eq!(
        header(r, "x-botix-signature"),
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    );

    // Standard Webhooks headers checked by the `standardwebhooks` package from PyPI.
    verify_with_standardwebhooks(&secret, r);
    app.stop().await;
}

fn verify_with_standardwebhooks(secret: &str, r: &common::Received) {
    let python = std::env::var("POSTHORN_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = r#"
import sys, json
from standardwebhooks.webhooks import Webhook
secret, msg_id, ts, sig = sys.argv[1:5]
body = sys.stdin.buffer.read()
Webhook(secret).verify(body, {"webhook-id": msg_id, "webhook-timestamp": ts, "webhook-signature": sig})
print("verified")
"#;
    let mut child = std::process::Command::new(&python)
        .args([
            "-c",
            script,
            secret,
            header(r, "webhook-id"),
            header(r, "webhook-timestamp"),
            header(r, "webhook-signature"),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python for the standardwebhooks check (set POSTHORN_PYTHON)");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&r.body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("verified"),
        "standardwebhooks refused the signature: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_5xx_is_retried_with_new_request_ids_until_it_succeeds() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    rx.script([Answer::status(500), Answer::status(503)]);
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;

    let attempts = app.settled(&event_id, SETTLE).await;
    let statuses: Vec<&str> = attempts.iter().map(|a| a.1.as_str()).collect();
    assert_eq!(statuses, ["failed", "failed", "succeeded"]);
    let seen = rx.seen();
    let numbers: Vec<&str> = seen
        .iter()
        .map(|r| header(r, "x-delivery-attempt"))
        .collect();
    assert_eq!(numbers, ["1", "2", "3"]);
    let ids: std::collections::HashSet<&str> =
        seen.iter().map(|r| header(r, "x-request-id")).collect();
    assert_eq!(ids.len(), 3, "every attempt has its own request id");
    assert!(
        seen.iter().all(|r| header(r, "x-event-id") == event_id),
        "the event id never changes"
    );
    app.stop().await;
}

#[tokio::test]
async fn connection_refused_is_retried_then_dead_lettered() {
    let app = TestApp::spawn().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &url).await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;

    let attempts = app.settled(&event_id, SETTLE).await;
    assert_eq!(
        attempts.len(),
        4,
        "first attempt plus the three schedule steps: {attempts:?}"
    );
    assert!(
        attempts.iter().all(|a| a.3.as_deref() == Some("connect")),
        "{attempts:?}"
    );
    assert_eq!(attempts.last().unwrap().1, "dead_letter");
    app.stop().await;
}

#[tokio::test]
async fn a_slow_receiver_times_out_and_is_retried() {
    let app = TestApp::spawn_with(|c| c.read_timeout = Duration::from_millis(500)).await;
    let rx = Receiver::start().await;
    rx.script([Answer::status(200).delay(Duration::from_secs(3))]);
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;

    let attempts = app.settled(&event_id, SETTLE).await;
    assert_eq!(attempts[0].1, "failed");
    assert_eq!(attempts[0].3.as_deref(), Some("timeout"));
    assert_eq!(attempts.last().unwrap().1, "succeeded");
    app.stop().await;
}

#[tokio::test]
async fn a_429_waits_for_retry_after() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    rx.script([Answer::status(429).header("retry-after", "2")]);
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;

    let attempts = app.settled(&event_id, SETTLE).await;
    assert_eq!(
        attempts.iter().map(|a| a.1.as_str()).collect::<Vec<_>>(),
        ["failed", "succeeded"]
    );
    let seen = rx.seen();
    let gap = seen[1].at - seen[0].at;
    assert!(
        gap >= Duration::from_secs(2),
        "second attempt came {gap:?} after the 429"
    );
    assert!(gap < Duration::from_secs(4), "but not much later: {gap:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_429_with_an_http_date_waits_until_then() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let (sys0, t0) = (std::time::SystemTime::now(), std::time::Instant::now());
    let at = sys0 + Duration::from_secs(4);
    // An HTTP-date has whole seconds: the retry is due at `at` rounded down.
    let whole = std::time::UNIX_EPOCH
        + Duration::from_secs(at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs());
    let due = t0 + whole.duration_since(sys0).unwrap();
    rx.script([Answer::status(429).header("retry-after", httpdate::fmt_http_date(at))]);
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;
    app.settled(&event_id, SETTLE).await;
    let seen = rx.seen();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen[1].at + Duration::from_millis(20) >= due,
        "retried {:?} before the date",
        due - seen[1].at
    );
    app.stop().await;
}

#[tokio::test]
async fn a_401_or_404_dead_letters_after_one_attempt() {
    for code in [401, 404] {
        let app = TestApp::spawn().await;
        let rx = Receiver::start().await;
        rx.set_default(Answer::status(code));
        let (project, _) = app.project("trial").await;
        app.endpoint(project, &rx.url).await;
        let event_id = app
            .ingest(project, "order.created", serde_json::json!({}))
            .await;
        let attempts = app.settled(&event_id, SETTLE).await;
        assert_eq!(attempts.len(), 1, "{code}: {attempts:?}");
        assert_eq!(
            (attempts[0].1.as_str(), attempts[0].2),
            ("dead_letter", Some(code as i16))
        );
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(rx.seen().len(), 1, "{code} is never sent again");
        app.stop().await;
    }
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let other = Receiver::start().await;
    rx.set_default(Answer::status(301).header("location", other.url.clone()));
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;
    let attempts = app.settled(&event_id, SETTLE).await;
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        (attempts[0].1.as_str(), attempts[0].2),
        ("dead_letter", Some(301))
    );
    assert!(
        other.seen().is_empty(),
        "the redirect target was never called"
    );
    app.stop().await;
}

#[tokio::test]
async fn an_exhausted_schedule_dead_letters() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(502));
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;
    let attempts = app.settled(&event_id, SETTLE).await;
    assert_eq!(
        attempts.iter().map(|a| a.1.as_str()).collect::<Vec<_>>(),
        ["failed", "failed", "failed", "dead_letter"]
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(rx.seen().len(), 4);
    app.stop().await;
}

#[tokio::test]
async fn the_max_window_cuts_the_schedule_short() {
    let app = TestApp::spawn_with(|c| {
        c.retry.schedule = vec![Duration::from_millis(200), Duration::from_secs(5)];
        c.retry.max_window = Duration::from_secs(2);
    })
    .await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(500));
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;
    let attempts = app.settled(&event_id, SETTLE).await;
    assert_eq!(
        attempts.iter().map(|a| a.1.as_str()).collect::<Vec<_>>(),
        ["failed", "dead_letter"]
    );
    app.stop().await;
}

#[tokio::test]
async fn a_100_kib_payload_is_sent_truncated() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let big = "x".repeat(100 * 1024);
    let event_id = app
        .ingest(project, "file.uploaded", serde_json::json!({ "blob": big }))
        .await;
    app.settled(&event_id, SETTLE).await;
    let body: serde_json::Value = serde_json::from_slice(&rx.seen()[0].body).unwrap();
    assert_eq!(body["truncated"], true);
    assert!(body["data"].is_null());
    assert_eq!(body["event_id"], event_id.as_str());
    assert!(rx.seen()[0].body.len() < 1024);
    app.stop().await;
}

#[tokio::test]
async fn private_targets_are_refused_unless_allowed() {
    let app = TestApp::spawn_with(|c| c.allow_private_targets = false).await;
    let rx = Receiver::start().await;
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    app.endpoint(project, &rx.url.replace("127.0.0.1", "localhost"))
        .await;
    let event_id = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;
    let deadline = Instant::now() + SETTLE;
    let attempts = loop {
        let a = app.attempts(&event_id).await;
        if a.len() == 2 && a.iter().all(|x| x.1 == "dead_letter") || Instant::now() > deadline {
            break a;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        attempts
            .iter()
            .all(|a| a.1 == "dead_letter" && a.3.as_deref() == Some("refused_target")),
        "{attempts:?}"
    );
    assert!(rx.seen().is_empty());
    app.stop().await;
}

#[tokio::test]
async fn disabled_endpoints_hold_their_rows_and_deleted_ones_dead_letter_them() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    let (project, _) = app.project("trial").await;
    let (ep, _) = app.endpoint(project, &rx.url).await;
    let access = app::auth::system_access(ProjectId::new(project), "test");
    let set_enabled = |enabled| app::db::endpoints::EndpointPatch {
        url: None,
        event_types: None,
        description: None,
        enabled: Some(enabled),
        rate_limit: None,
    };
    let queue = |event_id: String, request_id: &'static str| {
        let pool = app.pool.clone();
        let url = rx.url.clone();
        async move {
            sqlx::query(
                "INSERT INTO events (event_id, project_id, event_type, data) VALUES ($1, $2, 'order.created', '{}')",
            )
            .bind(&event_id).bind(project).execute(&pool).await.unwrap();
            sqlx::query(
                "INSERT INTO deliveries (project_id, event_id, event_type, endpoint_id, target_url, attempt, trigger, status, request_id, scheduled_at)
                 VALUES ($1, $2, 'order.created', $3, $4, 1, 'auto', 'pending', $5, now() + interval '300 ms')",
            )
            .bind(project).bind(&event_id).bind(ep).bind(&url).bind(request_id).execute(&pool).await.unwrap();
        }
    };
    app::db::endpoints::update(&app.pool, &access, EndpointId::new(ep), set_enabled(false))
        .await
        .unwrap();
    queue("evt_held000000000000000000001".into(), "req_held1").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        app.attempts("evt_held000000000000000000001").await[0].1,
        "pending",
        "a disabled endpoint's row waits"
    );
    assert!(rx.seen().is_empty());
    app::db::endpoints::update(&app.pool, &access, EndpointId::new(ep), set_enabled(true))
        .await
        .unwrap();
    let after = app.settled("evt_held000000000000000000001", SETTLE).await;
    assert_eq!(after[0].1, "succeeded", "re-enabling sends the held row");

    queue("evt_held000000000000000000002".into(), "req_held2").await;
    app::use_cases::endpoints::delete(&app.pool, &access, EndpointId::new(ep))
        .await
        .unwrap();
    let rows = app.attempts("evt_held000000000000000000002").await;
    assert_eq!(
        (rows[0].1.as_str(), rows[0].3.as_deref()),
        ("dead_letter", Some("endpoint_deleted"))
    );
    app.stop().await;
}

/// A burst of events through the API to an endpoint that answers `410` at once: some
/// attempts go straight from ingest to the dispatcher, the rest through the claim, and
/// every one of them ends (a dead letter each); none is left waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_to_an_endpoint_answering_410_leaves_nothing_waiting() {
    let app = TestApp::spawn().await;
    let rx = Receiver::start().await;
    rx.set_default(Answer::status(410));
    let (project, key) = app.project("business").await;
    app.endpoint(project, &rx.url).await;
    let statuses = app.post_events(&key, 1000, 16).await;
    assert!(statuses.iter().all(|s| *s == 202), "every event accepted");
    let deadline = Instant::now() + Duration::from_secs(60);
    let counts = loop {
        let counts: Vec<(String, i64)> = sqlx::query_as(
            "SELECT status || CASE WHEN parked THEN ' (parked)' ELSE '' END, count(*)
               FROM deliveries WHERE project_id = $1 GROUP BY 1 ORDER BY 1",
        )
        .bind(project)
        .fetch_all(&app.pool)
        .await
        .unwrap();
        if counts == [("dead_letter".to_string(), 1000)] || Instant::now() > deadline {
            break counts;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        counts,
        [("dead_letter".to_string(), 1000)],
        "attempts by status"
    );
    assert_eq!(rx.seen().len(), 1000, "each attempt sent once");
    app.stop().await;
}

/// An attempt that takes three times its lease to answer is sent once: the dispatcher
/// renews the lease while it waits, so lease recovery never hands it to a second send.
#[tokio::test]
async fn a_lease_is_renewed_while_a_slow_answer_is_awaited() {
    let app = TestApp::spawn_with(|cfg| {
        cfg.lease = Duration::from_secs(1);
        cfg.read_timeout = Duration::from_secs(6);
    })
    .await;
    let rx = Receiver::start().await;
    rx.script([Answer::status(200).delay(Duration::from_secs(3))]);
    let (project, _) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let event_id = app
        .ingest(project, "order.slow", serde_json::json!({"n": 1}))
        .await;
    let attempts = app.settled(&event_id, SETTLE).await;
    assert_eq!(attempts.len(), 1, "one attempt: {attempts:?}");
    assert_eq!(attempts[0].1, "succeeded");
    // Anything sent a second time would have arrived by now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(rx.seen().len(), 1, "sent once");
    app.stop().await;
}

/// An attempt's time is when it is due: a scheduled retry is shown (and ordered) at the
/// time it will go out, "in 1h", not when its predecessor failed; the API lists it once
/// that time has come, and the dashboard's "N new" count does not take it for new.
#[tokio::test]
async fn a_scheduled_retry_is_timed_and_ordered_when_it_is_due() {
    let app = TestApp::spawn_with(common::ordering::with_retry("1h")).await;
    let rx = Receiver::start().await;
    rx.script([Answer::status(503)]);
    let (project, key) = app.project("trial").await;
    app.endpoint(project, &rx.url).await;
    let failing = app
        .ingest(project, "order.created", serde_json::json!({}))
        .await;
    rx.wait_for(1, SETTLE).await;
    let deadline = tokio::time::Instant::now() + SETTLE;
    let follow_up = loop {
        let row: Option<(
            chrono::DateTime<chrono::Utc>,
            chrono::DateTime<chrono::Utc>,
            String,
        )> = sqlx::query_as(
            "SELECT created_at, scheduled_at, status FROM deliveries
                  WHERE event_id = $1 AND attempt = 2",
        )
        .bind(&failing)
        .fetch_optional(&app.pool)
        .await
        .unwrap();
        if let Some(row) = row {
            break row;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no follow-up queued"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (at, due, status) = follow_up;
    assert_eq!(status, "pending");
    assert_eq!(at, due, "the follow-up's time is when it is due");
    assert!(at > chrono::Utc::now() + chrono::Duration::minutes(59));

    // A later event's first attempt is older than the waiting retry: newest first, the
    // retry leads the dashboard's list, and the later attempt still counts as new.
    let access = app::auth::system_access(ProjectId::new(project), "test");
    let anchor: (chrono::DateTime<chrono::Utc>, i64) =
        sqlx::query_as("SELECT created_at, id FROM deliveries WHERE event_id = $1 AND attempt = 1")
            .bind(&failing)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let filter = app::delivery_filter::DeliveryFilter::default();
    assert_eq!(
        app::db::deliveries::count_newer(&app.pool, &access, &filter, 14, anchor)
            .await
            .unwrap(),
        0,
        "a retry not yet due is not new"
    );
    rx.set_default(Answer::status(200));
    let later = app
        .ingest(project, "order.paid", serde_json::json!({}))
        .await;
    app.settled(&later, SETTLE).await;
    assert_eq!(
        app::db::deliveries::count_newer(&app.pool, &access, &filter, 14, anchor)
            .await
            .unwrap(),
        1
    );
    let list = app::db::deliveries::list(&app.pool, &access, &filter, 14, 10)
        .await
        .unwrap();
    let order: Vec<(String, i32)> = list
        .iter()
        .map(|r| (r.event_id.to_string(), r.attempt))
        .collect();
    assert_eq!(
        order,
        [
            (failing.clone(), 2),
            (later.clone(), 1),
            (failing.clone(), 1)
        ]
    );

    // The API lists attempts whose time has come (up to its commit horizon, which may lag
    // a moment): both first attempts, not the retry, yet.
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let (status, page) = app
            .api(
                &key,
                reqwest::Method::GET,
                "/deliveries?limit=10",
                serde_json::Value::Null,
            )
            .await;
        assert_eq!(status, 200, "{page}");
        let listed: Vec<i64> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["attempt"].as_i64().unwrap())
            .collect();
        assert!(!listed.contains(&2), "{page}");
        if listed.len() == 2 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.stop().await;
}
