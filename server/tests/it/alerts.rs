//! Operational alerts against real receivers and a real SMTP server (Python's aiosmtpd
//! on loopback, writing a maildir): `endpoint.failing`, `endpoint.recovered` and
//! `delivery.dead_lettered` arrive once each, signed, at the operations endpoint and by
//! e-mail to the members who asked (at a confirmed address); a thousand dead letters make
//! one notice, not a flood; a client certificate about to expire is told once.

use crate::common;
use app::core::{AttemptId, EndpointId, ProjectId, UserId};

use std::time::{Duration, Instant};

use app::core::signing;
use common::{header, smtp::Smtp, Answer, Received, Receiver, TestApp};
use serde_json::{json, Value};

/// The notices an operations receiver got: (event type, data), after checking each is
/// signed with the operations endpoint's secret.
fn notices(seen: &[Received], secret: &str) -> Vec<(String, Value)> {
    seen.iter()
        .map(|r| {
            let ts: i64 = header(r, "webhook-timestamp").parse().unwrap();
            let check = signing::verify(
                secret,
                header(r, "webhook-id"),
                ts,
                &r.body,
                Some(header(r, "x-botix-signature")),
                Some(header(r, "webhook-signature")),
            );
            assert_eq!(
                (check.botix, check.standard),
                (Some(true), Some(true)),
                "unsigned notice"
            );
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            (
                body["event"].as_str().unwrap().to_string(),
                body["data"].clone(),
            )
        })
        .collect()
}

fn count(notices: &[(String, Value)], kind: &str) -> usize {
    notices.iter().filter(|n| n.0 == kind).count()
}

async fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A project whose owner asked for e-mail, with an operations endpoint: (project, owner's
/// e-mail, API key, ops receiver, ops secret).
async fn project_with_ops(app: &TestApp) -> (i64, String, String, Receiver, String) {
    let (project, key) = app.project("business").await;
    let (user_id, email): (i64, String) = sqlx::query_as(
        "SELECT u.id, u.email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.project_id = $1",
    )
    .bind(project)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(app::db::notices::set_email_alerts(
        &app.pool,
        ProjectId::new(project),
        UserId::new(user_id),
        true
    )
    .await
    .unwrap());
    // The address counts as confirmed (the link is tested in `alert_mail`).
    sqlx::query(
        "INSERT INTO alert_recipients (project_id, user_id, email, confirmed_at)
         VALUES ($1, $2, $3, now())",
    )
    .bind(project)
    .bind(user_id)
    .bind(&email)
    .execute(&app.pool)
    .await
    .unwrap();
    let ops = Receiver::start().await;
    let (ops_id, ops_secret) = app.endpoint(project, &ops.url).await;
    // The operations endpoint takes no events of its own: only notices reach it.
    sqlx::query("UPDATE endpoints SET event_types = '{ops.none}' WHERE id = $1")
        .bind(ops_id)
        .execute(&app.pool)
        .await
        .unwrap();
    app::db::projects::set_ops_endpoint(
        &app.pool,
        ProjectId::new(project),
        EndpointId::new(ops_id),
    )
    .await
    .unwrap();
    (project, email, key, ops, ops_secret)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failing_recovered_and_dead_letters_are_told_once_each_and_mailed() {
    let smtp = Smtp::start().await;
    let smtp_url = smtp.url.clone();
    let app = TestApp::spawn_with(move |cfg| cfg.smtp_url = Some(smtp_url)).await;
    let (project, email, _, ops, ops_secret) = project_with_ops(&app).await;
    app::db::notices::set_failing_after(&app.pool, ProjectId::new(project), 1)
        .await
        .unwrap();
    let bad = Receiver::start().await;
    bad.set_default(Answer::status(503));
    let (bad_id, _) = app.endpoint(project, &bad.url).await;

    // Failing for over a second: every attempt of three events fails, and each chain
    // (four attempts, 200 ms apart) ends a dead letter.
    for i in 0..3 {
        app.ingest(project, "order.paid", json!({ "i": i })).await;
    }
    wait_until("the dead letters' notice", Duration::from_secs(20), || {
        count(&notices(&ops.seen(), &ops_secret), "delivery.dead_lettered") >= 1
    })
    .await;
    wait_until("endpoint.failing", Duration::from_secs(20), || {
        count(&notices(&ops.seen(), &ops_secret), "endpoint.failing") >= 1
    })
    .await;

    // It recovers: the next event succeeds.
    bad.set_default(Answer::status(200));
    app.ingest(project, "order.paid", json!({ "i": 3 })).await;
    wait_until("endpoint.recovered", Duration::from_secs(20), || {
        count(&notices(&ops.seen(), &ops_secret), "endpoint.recovered") >= 1
    })
    .await;
    // Another round or two of the alert loop: nothing is told twice.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let told = notices(&ops.seen(), &ops_secret);
    assert_eq!(count(&told, "endpoint.failing"), 1, "{told:?}");
    assert_eq!(count(&told, "endpoint.recovered"), 1, "{told:?}");
    let dead: Vec<&Value> = told
        .iter()
        .filter(|n| n.0 == "delivery.dead_lettered")
        .map(|n| &n.1)
        .collect();
    assert_eq!(
        dead.len(),
        1,
        "three dead letters within a minute: one notice"
    );
    assert_eq!(dead[0]["endpoint_id"], bad_id);
    let failing = told.iter().find(|n| n.0 == "endpoint.failing").unwrap();
    assert_eq!(failing.1["url"], bad.url.as_str());
    assert_eq!(failing.1["after_seconds"], 1);

    // The same notices by e-mail, to the member who asked.
    let want = told.len();
    wait_until("the e-mails", Duration::from_secs(20), || {
        smtp.messages().len() >= want
    })
    .await;
    let mails = smtp.messages();
    assert_eq!(mails.len(), want, "one e-mail per notice");
    for m in &mails {
        assert!(m.contains(&format!("To: {email}")), "{m}");
        assert!(m.contains("Subject: [Posthorn]"), "{m}");
    }
    assert!(mails.iter().any(|m| m.contains("is delivering again")));
    assert!(mails
        .iter()
        .any(|m| m.contains("has failed every attempt since")));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_dead_letters_make_one_notice_a_minute() {
    let smtp = Smtp::start().await;
    let smtp_url = smtp.url.clone();
    let app = TestApp::spawn_with(move |cfg| {
        cfg.smtp_url = Some(smtp_url);
        cfg.plan_limits = app::core::ratelimit::PlanLimits::parse("business=100000").unwrap();
    })
    .await;
    let (project, _, key, ops, ops_secret) = project_with_ops(&app).await;
    let gone = Receiver::start().await;
    gone.set_default(Answer::status(404));
    let (gone_id, _) = app.endpoint(project, &gone.url).await;
    let client = reqwest::Client::new();
    for _ in 0..10 {
        let events: Vec<Value> = (0..100)
            .map(|i| json!({"event": "order.paid", "data": {"i": i}}))
            .collect();
        let r = client
            .post(format!("{}/public/v1/events/batch", app.base))
            .bearer_auth(&key)
            .json(&json!({ "events": events }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
    }
    let all_dead = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND status = 'dead_letter'",
        )
        .bind(gone_id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while all_dead().await < 1000 {
        assert!(Instant::now() < deadline, "the 1,000 attempts did not end");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Several rounds of the alert loop after the last dead letter.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let told = notices(&ops.seen(), &ops_secret);
    assert_eq!(
        told.len(),
        1,
        "one notice within the minute, not a flood: {told:?}"
    );
    let first = told[0].1["count"].as_i64().unwrap();
    assert_eq!(
        told[0].1["first_event_ids"].as_array().unwrap().len() as i64,
        first.min(5),
        "the first few ids"
    );

    // A minute later (the last notice's time moved back), the rest in one more.
    sqlx::query("UPDATE endpoints SET dead_letters_noticed_at = now() - interval '61 seconds' WHERE id = $1")
        .bind(gone_id)
        .execute(&app.pool)
        .await
        .unwrap();
    if first < 1000 {
        wait_until("the second notice", Duration::from_secs(10), || {
            ops.seen().len() >= 2
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    let told = notices(&ops.seen(), &ops_secret);
    let total: i64 = told.iter().map(|n| n.1["count"].as_i64().unwrap()).sum();
    assert_eq!(total, 1000, "every dead letter counted once: {told:?}");
    assert!(told.len() <= 2);
    wait_until("the e-mails", Duration::from_secs(20), || {
        smtp.messages().len() >= told.len()
    })
    .await;
    assert_eq!(smtp.messages().len(), told.len(), "one e-mail per notice");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn notices_about_the_operations_endpoint_are_not_sent_to_it() {
    let app = TestApp::spawn().await;
    let (project, _) = app.project("business").await;
    let ops = Receiver::start().await;
    ops.set_default(Answer::status(503));
    let (ops_id, _) = app.endpoint(project, &ops.url).await;
    app::db::projects::set_ops_endpoint(
        &app.pool,
        ProjectId::new(project),
        EndpointId::new(ops_id),
    )
    .await
    .unwrap();
    app::db::notices::set_failing_after(&app.pool, ProjectId::new(project), 1)
        .await
        .unwrap();
    let event = app.ingest(project, "order.paid", json!({})).await;
    app.settled(&event, Duration::from_secs(20)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let kinds: Vec<String> = sqlx::query_scalar("SELECT kind FROM notices ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
        if kinds.contains(&"endpoint.failing".to_string())
            && kinds.contains(&"delivery.dead_lettered".to_string())
        {
            break;
        }
        assert!(Instant::now() < deadline, "notices not recorded: {kinds:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sent_to_it: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM deliveries WHERE endpoint_id = $1 AND trigger = 'notice'",
    )
    .bind(ops_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        sent_to_it, 0,
        "a notice about the operations endpoint went to it"
    );
    // Only the one event's four attempts reached it.
    assert_eq!(ops.seen().len(), 4);
    app.stop().await;
}

/// A certificate for `name`, self-signed, that expires `days` from now; and its key.
fn certificate_expiring_in(name: &str, days: i64) -> (String, String) {
    use chrono::Datelike;
    let end = chrono::Utc::now() + chrono::Duration::days(days);
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.not_after = rcgen::date_time_ymd(end.year(), end.month() as u8, end.day() as u8);
    let key = rcgen::KeyPair::generate().unwrap();
    (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
}

#[tokio::test]
async fn a_client_certificate_expiring_within_14_days_is_told_once() {
    let app = TestApp::spawn().await;
    let (_, _, key, ops, ops_secret) = project_with_ops(&app).await;
    for (name, days) in [("soon.example", 10), ("later.example", 60)] {
        let (cert, cert_key) = certificate_expiring_in(name, days);
        let (status, body) = app
            .api(
                &key,
                reqwest::Method::POST,
                "/webhooks",
                json!({"url": format!("https://{name}/hook"), "events": ["order.paid"],
                       "client_certificate": {"cert": cert, "key": cert_key}}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    wait_until("the notice", Duration::from_secs(10), || {
        !ops.seen().is_empty()
    })
    .await;
    // Several more rounds of the alert loop tell it no second time.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let told = notices(&ops.seen(), &ops_secret);
    assert_eq!(told.len(), 1, "{told:?}");
    let (kind, data) = &told[0];
    assert_eq!(kind, "endpoint.certificate_expiring");
    assert_eq!(data["url"], "https://soon.example/hook");
    assert_eq!(data["subject"], "CN=soon.example");
    assert!(
        (9..=10).contains(&data["days_left"].as_i64().unwrap()),
        "{data}"
    );
    app.stop().await;
}

/// A notice goes out with its own trigger, `notice`: a failure is retried on the
/// schedule, the operations endpoint's filter does not keep it out, and a Retry of it is
/// not refused for the filter either.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_operations_notice_is_retried_on_the_schedule_and_never_filtered() {
    let app = TestApp::spawn().await;
    let (project, _, _, ops, ops_secret) = project_with_ops(&app).await;
    let ops_id: i64 = sqlx::query_scalar("SELECT ops_endpoint_id FROM projects WHERE id = $1")
        .bind(project)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    // A filter no notice passes (a notice's data has no amount).
    sqlx::query("UPDATE endpoints SET filter = 'data.amount > 1000' WHERE id = $1")
        .bind(ops_id)
        .execute(&app.pool)
        .await
        .unwrap();
    ops.script([Answer::status(500)]);
    let other = Receiver::start().await;
    let (other_id, _) = app.endpoint(project, &other.url).await;
    let mut tx = app.pool.begin().await.unwrap();
    app::db::notices::emit(
        &mut tx,
        ProjectId::new(project),
        other_id,
        "endpoint.disabled",
        &json!({ "endpoint_id": other_id, "reason": "test" }),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let seen = ops.wait_for(2, Duration::from_secs(20)).await;
    let told = notices(&seen, &ops_secret);
    assert_eq!(count(&told, "endpoint.disabled"), 2, "{told:?}");
    let attempts: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT trigger, status, triggered_by FROM deliveries WHERE endpoint_id = $1 ORDER BY attempt",
    )
    .bind(ops_id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let (triggers, statuses): (Vec<&str>, Vec<&str>) = attempts
        .iter()
        .map(|(t, s, _)| (t.as_str(), s.as_str()))
        .unzip();
    assert_eq!(triggers, ["notice", "notice"]);
    assert_eq!(statuses, ["failed", "succeeded"]);
    assert_eq!(attempts[0].2.as_deref(), Some("posthorn"));

    // Retried by hand, past the filter that would keep an event out.
    let last: i64 = sqlx::query_scalar(
        "SELECT id FROM deliveries WHERE endpoint_id = $1 ORDER BY attempt DESC LIMIT 1",
    )
    .bind(ops_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let access = app::auth::system_access(ProjectId::new(project), "test");
    let retried = app::use_cases::deliveries::retry(&app.pool, &access, AttemptId::new(last))
        .await
        .expect("a notice's Retry is not filtered");
    assert_eq!(retried.trigger.as_str(), "manual_retry");
    ops.wait_for(3, Duration::from_secs(20)).await;
    app.stop().await;
}
