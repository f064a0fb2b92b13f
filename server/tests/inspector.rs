//! The inspector over real HTTP: capture anything, keep bytes exact, enforce limits.

mod common;

use std::time::Duration;

use base64::{engine::general_purpose::STANDARD, Engine as _};
use common::TestApp;
use serde_json::Value;

async fn new_bin(app: &TestApp, http: &reqwest::Client) -> (String, String) {
    let res = http
        .post(format!("{}/inspector/bins", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let v: Value = res.json().await.unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32, "128 random bits, hex");
    assert_eq!(v["url"], format!("{}/r/{id}", app.base));
    assert!(v["expires_at"].is_string());
    (id, v["url"].as_str().unwrap().to_string())
}

async fn captured(app: &TestApp, http: &reqwest::Client, id: &str) -> Vec<Value> {
    let v: Value = http
        .get(format!("{}/inspector/bins/{id}/requests", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn every_method_path_and_query_is_captured_newest_first() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let (id, url) = new_bin(&app, &http).await;
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"] {
        let res = http
            .request(
                method.parse().unwrap(),
                format!("{url}/deep/path/{}?a=1&b=two&a=3", method.to_lowercase()),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{method}");
    }
    let list = captured(&app, &http, &id).await;
    assert_eq!(list.len(), 7);
    let methods: Vec<&str> = list.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        ["HEAD", "OPTIONS", "DELETE", "PATCH", "PUT", "POST", "GET"]
    );
    assert_eq!(list[6]["path"], format!("/r/{id}/deep/path/get"));
    assert_eq!(list[6]["query"], "a=1&b=two&a=3");
    assert!(list[6]["remote_addr"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    app.stop().await;
}

#[tokio::test]
async fn repeated_headers_and_binary_bodies_are_kept_exactly() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let (id, url) = new_bin(&app, &http).await;
    let body: Vec<u8> = (0..=255u8).chain([0, 0, 255]).collect();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.append("x-repeat", "one".parse().unwrap());
    headers.append("x-repeat", "two".parse().unwrap());
    headers.append(
        "cookie",
        "theirs=1; posthorn_session=secret".parse().unwrap(),
    );
    http.post(&url)
        .headers(headers)
        .body(body.clone())
        .send()
        .await
        .unwrap();
    let list = captured(&app, &http, &id).await;
    let r = &list[0];
    assert_eq!(
        STANDARD.decode(r["body_base64"].as_str().unwrap()).unwrap(),
        body
    );
    assert_eq!(r["size"], body.len());
    let hs: Vec<(String, String)> = serde_json::from_value(r["headers"].clone()).unwrap();
    let repeats: Vec<&str> = hs
        .iter()
        .filter(|(k, _)| k == "x-repeat")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(repeats, ["one", "two"]);
    let cookie = hs
        .iter()
        .find(|(k, _)| k == "cookie")
        .map(|(_, v)| v.as_str());
    assert_eq!(
        cookie,
        Some("theirs=1"),
        "Posthorn's own session cookie is never kept"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_body_over_one_mib_is_refused_and_still_listed() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let (id, url) = new_bin(&app, &http).await;
    let ok = http
        .post(&url)
        .body(vec![b'a'; 1024 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200, "exactly 1 MiB is fine");
    let big = http
        .post(&url)
        .body(vec![b'a'; 1024 * 1024 + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
    let list = captured(&app, &http, &id).await;
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["status"], 413);
    assert_eq!(list[0]["size"], 1024 * 1024 + 1);
    assert_eq!(list[0]["body_base64"], "");
    assert_eq!(list[1]["size"], 1024 * 1024);
    app.stop().await;
}

#[tokio::test]
async fn unknown_and_expired_bins_answer_404() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let res = http
        .post(format!("{}/r/00000000000000000000000000000000", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let (id, url) = new_bin(&app, &http).await;
    sqlx::query("UPDATE bins SET expires_at = now() - interval '1 second' WHERE id = $1")
        .bind(&id)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(http.get(&url).send().await.unwrap().status(), 404);
    assert_eq!(
        http.get(format!("{}/inspector/bins/{id}/requests", app.base))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    app.stop().await;
}

#[tokio::test]
async fn a_bin_keeps_its_newest_500_requests() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let (id, url) = new_bin(&app, &http).await;
    for i in 0..510 {
        http.post(format!("{url}?n={i}")).send().await.unwrap();
    }
    let list = captured(&app, &http, &id).await;
    assert_eq!(list.len(), 500);
    assert_eq!(list[0]["query"], "n=509");
    assert_eq!(list[499]["query"], "n=10");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM bin_requests WHERE bin_id = $1")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, 500);
    app.stop().await;
}

#[tokio::test]
async fn the_reaper_deletes_expired_bins_with_their_requests() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let (id, url) = new_bin(&app, &http).await;
    let (keep, _) = new_bin(&app, &http).await;
    http.post(&url).body("x").send().await.unwrap();
    sqlx::query("UPDATE bins SET expires_at = now() - interval '1 second' WHERE id = $1")
        .bind(&id)
        .execute(&app.pool)
        .await
        .unwrap();
    let swept = app::db::maintenance::sweep(&app.pool, 14).await.unwrap();
    assert_eq!(swept.bins_deleted, 1);
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM bin_requests WHERE bin_id = $1")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
    assert!(app::db::bins::live(&app.pool, &keep)
        .await
        .unwrap()
        .is_some());
    app.stop().await;
}

#[tokio::test]
async fn copy_as_curl_reproduces_the_request_in_another_bin() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let (first, url) = new_bin(&app, &http).await;
    let (second, url2) = new_bin(&app, &http).await;
    for body in [
        br#"{"it's": "json with 'quotes' and $dollars"}"#.to_vec(),
        vec![0u8, 159, 146, 150, 10, 39],
    ] {
        http.put(format!("{url}/sub?x=1&y=%20z"))
            .header("x-custom", "a 'quoted' value")
            .header("content-type", "application/octet-stream")
            .body(body)
            .send()
            .await
            .unwrap();
    }
    let original = captured(&app, &http, &first).await;
    for r in original.iter().rev() {
        let headers: Vec<(String, String)> = serde_json::from_value(r["headers"].clone()).unwrap();
        let body = STANDARD.decode(r["body_base64"].as_str().unwrap()).unwrap();
        let target = format!("{url2}/sub?{}", r["query"].as_str().unwrap());
        let cmd =
            app::core::curl::curl_bytes(r["method"].as_str().unwrap(), &target, &headers, &body);
        let out = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{cmd}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let replayed = captured(&app, &http, &second).await;
    assert_eq!(replayed.len(), original.len());
    for (a, b) in original.iter().zip(&replayed) {
        assert_eq!(a["method"], b["method"]);
        assert_eq!(a["query"], b["query"]);
        assert_eq!(a["body_base64"], b["body_base64"]);
        let strip = |v: &Value| -> Vec<(String, String)> {
            let hs: Vec<(String, String)> = serde_json::from_value(v.clone()).unwrap();
            // curl decides where Content-Length goes, so compare the headers as a set.
            let mut hs: Vec<(String, String)> =
                hs.into_iter().filter(|(k, _)| k != "host").collect();
            hs.sort();
            hs
        };
        assert_eq!(
            strip(&a["headers"]),
            strip(&b["headers"]),
            "the same headers and values"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn bin_creation_is_rate_limited_per_address() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..app::inspector::BIN_CREATIONS_PER_MINUTE + 2 {
        statuses.push(
            http.post(format!("{}/inspector/bins", app.base))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
        );
    }
    // The window is the calendar minute: a run straddling it may see its count reset once.
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        statuses.iter().filter(|s| **s == 201).count()
            >= app::inspector::BIN_CREATIONS_PER_MINUTE as usize
    );
    app.stop().await;
}
