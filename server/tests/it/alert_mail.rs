//! Alert e-mail, one recipient at a time, against a real SMTP server whose answers are
//! scripted per address (see `common::smtp`): a refused address fails alone and is not
//! tried again, a busy one is tried again until it is taken, nobody gets a notice twice,
//! and nobody gets alerts before confirming the address through the link mailed to it.

use crate::common;
use app::core::{ProjectId, UserId};

use std::time::{Duration, Instant};

use common::{browser::Browser, smtp::Smtp, TestApp};
use serde_json::json;

async fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The product with alert e-mail going to `smtp`, trying a mail again 200 ms after a
/// temporary failure, five tries in all; `tweak` changes the rest.
async fn app_mailing_to(smtp: &Smtp, tweak: impl FnOnce(&mut app::cfg::Config)) -> TestApp {
    let url = smtp.url.clone();
    TestApp::spawn_with(move |cfg| {
        cfg.smtp_url = Some(url);
        cfg.alert_mail_retry = vec![Duration::from_millis(200); 4];
        tweak(cfg);
    })
    .await
}

/// A project and its owner's address (the owner signs in with `password-123`).
async fn project(app: &TestApp) -> (i64, String) {
    let (project, _) = app.project("business").await;
    let email: String = sqlx::query_scalar(
        "SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.project_id = $1",
    )
    .bind(project)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    (project, email)
}

/// A member of the project who does not sign in; returns the user's id.
async fn member(app: &TestApp, project: i64, email: &str) -> i64 {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO users (email, password_hash) VALUES ($1, 'never signs in') RETURNING id",
    )
    .bind(email)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO memberships (project_id, user_id, role) VALUES ($1, $2, 'member')")
        .bind(project)
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    id
}

/// The member asked for alerts by e-mail and confirmed the address (the link itself is
/// tested below).
async fn opted_in(app: &TestApp, project: i64, user_id: i64) {
    assert!(app::db::notices::set_email_alerts(
        &app.pool,
        ProjectId::new(project),
        UserId::new(user_id),
        true
    )
    .await
    .unwrap());
    sqlx::query(
        "INSERT INTO alert_recipients (project_id, user_id, email, confirmed_at)
         SELECT $1, id, email, now() FROM users WHERE id = $2",
    )
    .bind(project)
    .bind(user_id)
    .execute(&app.pool)
    .await
    .unwrap();
}

/// The member's access to the project, as the cabinet would make it.
async fn access_of(app: &TestApp, project: i64, user_id: i64) -> app::auth::Access {
    let user = app::db::users::get(&app.pool, UserId::new(user_id))
        .await
        .unwrap()
        .unwrap();
    app::auth::authorize(
        &app.pool,
        &user,
        ProjectId::new(project),
        app::core::permissions::Action::ReadEndpoints,
    )
    .await
    .unwrap()
}

/// Records an `endpoint.recovered` notice, as the alert loop would.
async fn notice(app: &TestApp, project: i64) {
    let mut tx = app.pool.begin().await.unwrap();
    let data = json!({ "endpoint_id": 0, "url": "https://api.example.com/hooks" });
    app::db::notices::emit(
        &mut tx,
        ProjectId::new(project),
        0,
        "endpoint.recovered",
        &data,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// The text of a mail with quoted-printable line breaks undone.
fn unfolded(mail: &str) -> String {
    mail.replace("=\r\n", "").replace("=\n", "")
}

fn is_alert(mail: &str) -> bool {
    unfolded(mail).contains("is delivering again")
}

/// The confirmation link in a mail.
fn confirmation_link(mail: &str) -> Option<String> {
    let text = unfolded(mail);
    let at = text.find("/alerts/confirm/")?;
    let start = text[..at].rfind("http")?;
    let end = text[at..]
        .find(|c: char| c.is_whitespace())
        .map_or(text.len(), |e| at + e);
    Some(text[start..end].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_recipient_fails_alone_and_everyone_else_gets_the_notice_once() {
    let smtp = Smtp::start().await;
    let app = app_mailing_to(&smtp, |_| {}).await;
    let (project, owner) = project(&app).await;
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    // Mailed in address order: two before the refused address, one after it.
    let first = format!("a-first-{tag}@example.com");
    let busy = format!("busy-{tag}@example.com");
    let refused = format!("refuse-{tag}@example.com");
    let last = format!("z-last-{tag}@example.com");
    let everyone = [&first, &busy, &refused, &last];
    for address in everyone {
        let id = member(&app, project, address).await;
        opted_in(&app, project, id).await;
    }
    notice(&app, project).await;

    let deliverable = [&first, &busy, &last];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && !deliverable.iter().all(|a| !smtp.messages_to(a).is_empty())
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Several more rounds of the alert loop (one every 200 ms here).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got: Vec<(&str, usize)> = everyone
        .iter()
        .map(|a| (a.as_str(), smtp.messages_to(a).len()))
        .collect();
    let want: Vec<(&str, usize)> = vec![
        (first.as_str(), 1),
        (busy.as_str(), 1),
        (refused.as_str(), 0),
        (last.as_str(), 1),
    ];
    assert_eq!(
        got, want,
        "each recipient gets the notice once, whatever another's server answers"
    );
    assert_eq!(smtp.offered(&refused), 1, "a 550 is not tried again");
    assert_eq!(
        smtp.offered(&busy),
        3,
        "a 451 is tried again until it is taken"
    );

    // The alerts panel names the refused address and the server's reply.
    let browser = Browser::new(&app);
    assert!(browser.login(&owner, "password-123").await);
    let (status, panel) = browser.call("alert_settings", &[]).await;
    assert_eq!(status, 200, "{panel}");
    assert!(panel.contains(&refused), "{panel}");
    assert!(panel.contains("550"), "{panel}");
    assert!(panel.contains("Recipient address rejected"), "{panel}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_address_gets_alerts_only_after_its_owner_confirms_it() {
    let smtp = Smtp::start().await;
    let app = app_mailing_to(&smtp, |_| {}).await;
    let (project, owner) = project(&app).await;
    let browser = Browser::new(&app);
    assert!(browser.login(&owner, "password-123").await);
    let (status, body) = browser
        .call(
            "save_alert_settings",
            &[("minutes", "15"), ("email", "true")],
        )
        .await;
    assert!(status < 400, "{status} {body}");
    notice(&app, project).await;

    // Only the confirmation arrives, however many rounds pass.
    wait_until("a mail to the owner", Duration::from_secs(10), || {
        !smtp.messages_to(&owner).is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let mails = smtp.messages_to(&owner);
    assert!(
        !mails.iter().any(|m| is_alert(m)),
        "an unconfirmed address got alert mail: {mails:?}"
    );
    assert_eq!(mails.len(), 1, "{mails:?}");
    let link = confirmation_link(&mails[0]).expect("a confirmation link");
    let (_, panel) = browser.call("alert_settings", &[]).await;
    assert!(panel.contains("waiting for confirmation"), "{panel}");

    // Whoever reads the mailbox confirms; no account is needed.
    let reader = Browser::new(&app);
    let (status, page) = reader.get(&link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("confirm-alert-address-button"), "{page}");
    let token = link.rsplit('/').next().unwrap();
    let (status, body) = reader
        .call("confirm_alert_address", &[("token", token)])
        .await;
    assert!(status < 400, "{status} {body}");
    let (status, body) = reader
        .call("confirm_alert_address", &[("token", token)])
        .await;
    assert!(status >= 400, "a used link is refused: {status} {body}");
    assert!(body.contains("unknown, used or expired"), "{body}");

    // From now on the owner's address gets alerts: the next notice, not the earlier one.
    notice(&app, project).await;
    wait_until("the alert mail", Duration::from_secs(10), || {
        smtp.messages_to(&owner).iter().any(|m| is_alert(m))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let alerts = smtp
        .messages_to(&owner)
        .into_iter()
        .filter(|m| is_alert(m))
        .count();
    assert_eq!(alerts, 1);
    let (_, panel) = browser.call("alert_settings", &[]).await;
    assert!(!panel.contains("waiting for confirmation"), "{panel}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn confirmation_mails_are_limited_per_address_and_per_project() {
    let smtp = Smtp::start().await;
    let app = app_mailing_to(&smtp, |_| {}).await;
    let (project, owner) = project(&app).await;
    let browser = Browser::new(&app);
    assert!(browser.login(&owner, "password-123").await);
    // Turning e-mail on mails the first; saving the form again mails no other.
    for _ in 0..2 {
        let (status, body) = browser
            .call(
                "save_alert_settings",
                &[("minutes", "15"), ("email", "true")],
            )
            .await;
        assert!(status < 400, "{status} {body}");
    }
    // Two more on request, then the address's limit of three a day.
    for _ in 0..2 {
        let (status, body) = browser.call("resend_alert_confirmation", &[]).await;
        assert!(status < 400, "{status} {body}");
    }
    let (status, body) = browser.call("resend_alert_confirmation", &[]).await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("3 confirmation mails"), "{body}");
    wait_until("three confirmations", Duration::from_secs(10), || {
        smtp.messages_to(&owner).len() >= 3
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mails = smtp.messages_to(&owner);
    assert_eq!(mails.len(), 3);
    // Each mail carried a new link, and only the newest one works.
    let mut open = 0;
    for mail in &mails {
        let link = confirmation_link(mail).expect("a link");
        let token = link.rsplit('/').next().unwrap();
        let (status, _) = browser
            .call("alert_address_to_confirm", &[("token", token)])
            .await;
        open += usize::from(status == 200);
    }
    assert_eq!(open, 1, "only the newest link works");

    // The same address asked for by another project: still three a day in all.
    let (other, _) = app.project("business").await;
    let owner_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE email = $1")
        .bind(&owner)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO memberships (project_id, user_id, role) VALUES ($1, $2, 'member')")
        .bind(other)
        .bind(owner_id)
        .execute(&app.pool)
        .await
        .unwrap();
    let elsewhere = access_of(&app, other, owner_id).await;
    app::use_cases::alerts::set_email_alerts(&app.pool, &elsewhere, true)
        .await
        .unwrap();
    let refused = app::use_cases::alerts::send_confirmation_again(&app.pool, &elsewhere)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("This address"), "{refused}");

    // The project's limit: twenty a day, whichever the addresses.
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let mut project_refusal = None;
    for i in 0..7 {
        let id = member(&app, project, &format!("member-{i}-{tag}@example.com")).await;
        let access = access_of(&app, project, id).await;
        app::use_cases::alerts::set_email_alerts(&app.pool, &access, true)
            .await
            .unwrap();
        for _ in 0..2 {
            if let Err(e) =
                app::use_cases::alerts::send_confirmation_again(&app.pool, &access).await
            {
                project_refusal = Some(e.to_string());
            }
        }
    }
    assert!(
        project_refusal
            .as_deref()
            .is_some_and(|r| r.contains("This project")),
        "{project_refusal:?}"
    );
    let asked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM alert_mails WHERE project_id = $1 AND notice_id IS NULL",
    )
    .bind(project)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(asked, 20);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn past_the_hourly_cap_alert_mail_waits_and_is_not_lost() {
    let smtp = Smtp::start().await;
    let app = app_mailing_to(&smtp, |cfg| cfg.alert_mails_per_hour = 2).await;
    let (project, _) = project(&app).await;
    let address = format!("capped-{}@example.com", ulid::Ulid::new()).to_lowercase();
    let id = member(&app, project, &address).await;
    opted_in(&app, project, id).await;
    for _ in 0..3 {
        notice(&app, project).await;
    }
    wait_until("two mails", Duration::from_secs(10), || {
        smtp.messages_to(&address).len() >= 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(smtp.messages_to(&address).len(), 2, "two an hour");

    // An hour later (the tries moved back by an hour), the third goes out.
    sqlx::query(
        "UPDATE alert_mails SET tried_at = tried_at - interval '1 hour' WHERE project_id = $1",
    )
    .bind(project)
    .execute(&app.pool)
    .await
    .unwrap();
    wait_until("the third mail", Duration::from_secs(10), || {
        smtp.messages_to(&address).len() >= 3
    })
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(smtp.messages_to(&address).len(), 3);
    app.stop().await;
}
