//! The endpoint card's plain forms (client certificate, filter save and try) answer a
//! refusal with its status, not with the redirect back that carries a form's mistakes.

use reqwest::header;

use super::{jar::*, operator, TestApp};

#[tokio::test]
async fn the_plain_card_forms_refuse_a_viewer_403_and_another_projects_endpoint_404() {
    let app = TestApp::spawn().await;
    let op = operator(&app).await;
    let (project, _) = app.project("business").await;
    let (other, _) = app.project("business").await;
    let (mine, _) = app.endpoint(project, "https://hooks.example/mine").await;
    let (theirs, _) = app.endpoint(other, "https://hooks.example/theirs").await;
    let (mine, theirs) = (mine.to_string(), theirs.to_string());
    let forms = |id: &str| {
        [
            (
                "set_client_certificate",
                vec![
                    ("id", id.to_string()),
                    ("cert", "".into()),
                    ("key", "".into()),
                ],
            ),
            (
                "set_endpoint_filter",
                vec![("id", id.to_string()), ("filter", "event == \"a\"".into())],
            ),
            (
                "try_endpoint_filter",
                vec![("id", id.to_string()), ("filter", "event == \"a\"".into())],
            ),
        ]
    };
    let viewer = Jar::new(&app);
    viewer.get(&op.link(project, "viewer").await).await;
    let member = Jar::new(&app);
    member.get(&op.link(project, "member").await).await;
    let mut seen = Vec::new();
    for (name, form) in forms(&mine) {
        seen.push((name, "viewer", viewer.card_form(name, &form).await));
    }
    for (name, form) in forms(&theirs) {
        seen.push((
            name,
            "member, another project's endpoint",
            member.card_form(name, &form).await,
        ));
    }
    let expected: Vec<_> = seen
        .iter()
        .map(|(n, who, _)| (*n, *who, if who.starts_with("viewer") { 403 } else { 404 }))
        .collect();
    assert_eq!(seen, expected);
    let filter: Option<String> = sqlx::query_scalar("SELECT filter FROM endpoints WHERE id = $1")
        .bind(mine.parse::<i64>().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(filter, None, "the viewer changed nothing");

    // A member's own forms still go back to the page, a mistake shown there.
    let r = member
        .form(
            "/api/try_endpoint_filter",
            &[("id", &mine), ("filter", "event == \"a\"")],
        )
        .await;
    let back = r.headers()[header::LOCATION].to_str().unwrap().to_string();
    assert!(
        r.status().is_redirection() && back.contains(&format!("try_endpoint={mine}")),
        "{back}"
    );
    let r = member
        .form(
            "/api/set_endpoint_filter",
            &[("id", &mine), ("filter", "event ==")],
        )
        .await;
    let back = r.headers()[header::LOCATION].to_str().unwrap().to_string();
    assert!(
        r.status().is_redirection() && back.contains("filter_error="),
        "{back}"
    );
    app.stop().await;
}
