//! A portal session never acts for a signed-in dashboard user: a link opened in a
//! dashboard browser is refused, a browser holding both is the dashboard user's, and
//! signing out ends both.

use reqwest::header;

use super::{client, jar::*, open, operator, TestApp};

#[tokio::test]
async fn a_portal_link_opened_in_a_signed_in_dashboard_browser_is_refused() {
    let app = TestApp::spawn().await;
    let op = operator(&app).await;
    let (mine, browser) = signed_in_owner(&app).await;
    let (attackers, _) = app.project("business").await;
    let link = op.link(attackers, "owner").await;

    // A hostile page sends the signed-in owner to the attacker's link.
    let r = browser.get(&link).await;
    let status = r.status().as_u16();
    let page = r.text().await.unwrap();
    assert_eq!(
        (status, browser.holds(PORTAL)),
        (409, false),
        "the link is refused and sets no portal cookie: {page}"
    );
    assert!(
        page.contains("signed in to the Posthorn dashboard"),
        "{page}"
    );

    // What the owner does next stays in their own project.
    let url = "https://hooks.mine.example/in";
    let (s, body) = browser
        .call(
            "create_endpoint",
            &[("url", url), ("event_types", "*"), ("description", "")],
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(project_of(&app, url).await, mine);

    // The link was not used up: the customer it was meant for may still open it.
    let (s, cookie) = open(&link).await;
    assert_eq!((s, cookie.is_some()), (303, true));
    app.stop().await;
}

#[tokio::test]
async fn a_dashboard_session_wins_over_a_portal_cookie_the_browser_also_holds() {
    let app = TestApp::spawn().await;
    let op = operator(&app).await;
    let (mine, browser) = signed_in_owner(&app).await;
    let (attackers, _) = app.project("business").await;
    // The attacker's own portal cookie, in the owner's browser (a link opened before
    // signing in, or a browser that does not keep framed cookies apart).
    let attacker = Jar::new(&app);
    attacker.get(&op.link(attackers, "owner").await).await;
    browser.plant(PORTAL, &attacker.value(PORTAL).expect("a portal cookie"));

    let url = "https://hooks.mine.example/both";
    let (s, body) = browser
        .call(
            "create_endpoint",
            &[("url", url), ("event_types", "*"), ("description", "")],
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let landed = project_of(&app, url).await;
    assert_eq!(
        landed, mine,
        "the endpoint belongs in the owner's project, not the attacker's {attackers}"
    );
    let (_, viewer) = browser.call("get_viewer", &[]).await;
    assert!(
        viewer.contains("owner-") && viewer.contains("\"portal\":null"),
        "{viewer}"
    );
    let keys = browser.get("/developers/keys").await;
    assert_eq!(keys.status(), 200, "dashboard pages stay the owner's");
    assert!(!browser.holds(PORTAL), "the stray portal cookie is dropped");
    let html = browser
        .get("/developers/webhooks")
        .await
        .text()
        .await
        .unwrap();
    assert!(!html.contains("data-testid=\"portal-header\""));
    app.stop().await;
}

#[tokio::test]
async fn signing_out_ends_the_dashboard_and_the_portal_session_alike() {
    let app = TestApp::spawn().await;
    let op = operator(&app).await;
    let (project, _) = app.project("business").await;
    for sign_out in ["/logout", "/api/logout"] {
        let (_, browser) = signed_in_owner(&app).await;
        let portal = Jar::new(&app);
        portal.get(&op.link(project, "member").await).await;
        let token = portal.value(PORTAL).expect("a portal cookie");
        browser.plant(PORTAL, &token);

        let r = browser.form(sign_out, &[]).await;
        assert!(
            r.status().is_redirection() || r.status() == 200,
            "{sign_out}"
        );
        assert_eq!(
            (browser.holds(DASHBOARD), browser.holds(PORTAL)),
            (false, false),
            "{sign_out} clears both cookies"
        );
        let r = browser.get("/developers/deliveries").await;
        assert_eq!(r.status(), 303, "{sign_out}: signed out of the dashboard");
        // The portal session itself is over, not only its cookie.
        let r = portal.get("/developers/deliveries").await;
        assert_eq!(r.status(), 401, "{sign_out}: the portal session ended");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_portal_page_signs_out_by_a_same_origin_post_only() {
    let app = TestApp::spawn().await;
    let op = operator(&app).await;
    let (project, _) = app.project("business").await;
    let portal = Jar::new(&app);
    portal.get(&op.link(project, "viewer").await).await;
    let html = portal
        .get("/developers/deliveries")
        .await
        .text()
        .await
        .unwrap();
    let form = html
        .split("data-testid=\"portal-sign-out\"")
        .next()
        .and_then(|before| before.rsplit("<form").next())
        .unwrap_or_default();
    assert!(
        html.contains("data-testid=\"portal-sign-out\"")
            && form.contains("method=\"post\"")
            && form.contains("action=\"/logout\""),
        "a sign-out form on the portal's header: {}",
        html.split("portal-header").nth(1).unwrap_or(&html)
    );

    // Another site can neither post it nor sign out with a link.
    let r = portal
        .send(
            client()
                .post(format!("{}/logout", app.base))
                .header(header::ORIGIN, "https://evil.example")
                .header("sec-fetch-site", "cross-site"),
        )
        .await;
    assert_eq!(r.status(), 403);
    assert_eq!(portal.get("/logout").await.status(), 200);
    assert!(portal.holds(PORTAL));
    assert_eq!(portal.get("/developers/deliveries").await.status(), 200);

    // The portal's own button: a page that may stay in the operator's frame.
    let token = portal.value(PORTAL).unwrap();
    let r = portal.form("/logout", &[]).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get(header::X_FRAME_OPTIONS).is_none());
    assert!(r.text().await.unwrap().contains("signed out"));
    assert!(!portal.holds(PORTAL));
    portal.plant(PORTAL, &token);
    assert_eq!(portal.get("/developers/deliveries").await.status(), 401);
    app.stop().await;
}

#[tokio::test]
async fn two_portal_cookies_name_no_session() {
    let app = TestApp::spawn().await;
    let op = operator(&app).await;
    let (customers, _) = app.project("business").await;
    let (attackers, _) = app.project("business").await;
    let customer = Jar::new(&app);
    customer.get(&op.link(customers, "owner").await).await;
    let attacker = Jar::new(&app);
    attacker.get(&op.link(attackers, "owner").await).await;
    let (mine, theirs) = (
        customer.value(PORTAL).unwrap(),
        attacker.value(PORTAL).unwrap(),
    );
    // A cookie planted for a narrower path (or from a sibling domain) comes first.
    let both = format!("{PORTAL}={theirs}; {PORTAL}={mine}");
    let url = "https://hooks.customer.example/planted";
    let r = client()
        .post(format!("{}/api/create_endpoint", app.base))
        .header(header::COOKIE, &both)
        .header(header::ORIGIN, &app.base)
        .form(&[("url", url), ("event_types", "*"), ("description", "")])
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let made: Option<i64> = sqlx::query_scalar("SELECT project_id FROM endpoints WHERE url = $1")
        .bind(url)
        .fetch_optional(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        (status, made),
        (401, None),
        "neither cookie acts (the attacker's project is {attackers})"
    );
    let page = client()
        .get(format!("{}/developers/webhooks", app.base))
        .header(header::COOKIE, &both)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 401);
    app.stop().await;
}

#[tokio::test]
async fn a_portal_owner_reaches_no_dashboard_only_function() {
    let app = TestApp::spawn().await;
    let op = operator(&app).await;
    let (project, _) = app.project("business").await;
    let (other, _) = app.project("business").await;
    let (endpoint, _) = app.endpoint(project, "https://hooks.example/ops").await;
    let endpoint = endpoint.to_string();
    let portal = Jar::new(&app);
    portal.get(&op.link(project, "owner").await).await;
    let other = other.to_string();
    for (name, form) in [
        ("create_key", vec![("name", "mine")]),
        ("revoke_key", vec![("id", "1")]),
        ("invite_member", vec![("email", "friend@example.com")]),
        ("remove_member", vec![("email", "friend@example.com")]),
        (
            "save_alert_settings",
            vec![("minutes", "5"), ("email", "true")],
        ),
        ("resend_alert_confirmation", vec![]),
        ("set_ops_endpoint", vec![("id", endpoint.as_str())]),
        (
            "change_password",
            vec![("current", "x"), ("new_password", "long-enough-password")],
        ),
        ("switch_project", vec![("project_id", other.as_str())]),
        // A schema refuses the whole project's events: the platform's, not a customer's.
        (
            "set_event_schema",
            vec![("event_type", "order.paid"), ("schema", r#"{"not": {}}"#)],
        ),
        ("remove_event_schema", vec![("event_type", "order.paid")]),
        ("try_event_schema", vec![("schema", "{}")]),
    ] {
        let (s, body) = portal.call(name, &form).await;
        assert!(matches!(s, 401 | 403 | 404), "{name}: {s} {body}");
    }
    let schemas: i64 =
        sqlx::query_scalar("SELECT count(*) FROM event_type_schemas WHERE project_id = $1")
            .bind(project)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(schemas, 0, "a portal user set a schema");
    let (keys, invitations): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM api_keys WHERE project_id = $1),
                (SELECT count(*) FROM invitations WHERE project_id = $1)",
    )
    .bind(project)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((keys, invitations), (1, 0));
    app.stop().await;
}
