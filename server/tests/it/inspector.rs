//! The inspector over real HTTP: capture anything, keep bytes exact, enforce limits.

use crate::common;

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

/// Every capture of a bin, newest first, walking the list's cursor.
async fn captured(app: &TestApp, http: &reqwest::Client, id: &str) -> Vec<Value> {
    let mut all = Vec::new();
    let mut cursor = String::new();
    loop {
        let v: Value = http
            .get(format!(
                "{}/inspector/bins/{id}/requests?limit=100&cursor={cursor}",
                app.base
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        all.extend(v["data"].as_array().unwrap().iter().cloned());
        match v["next_cursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => return all,
        }
    }
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
    // Twice the limit and more: a run straddling the calendar minute's reset still
    // fills one of its two windows.
    for _ in 0..2 * app::server_fns::inspector::BIN_CREATIONS_PER_MINUTE + 2 {
        statuses.push(
            http.post(format!("{}/inspector/bins", app.base))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
        );
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        statuses.iter().filter(|s| **s == 201).count()
            >= app::server_fns::inspector::BIN_CREATIONS_PER_MINUTE as usize
    );
    app.stop().await;
}

/// A bin keeps its newest captures within its byte quota; the inspector as a whole stops
/// taking captures (507) when its budget is spent, rather than evicting anyone's bin.
#[tokio::test]
async fn bins_have_a_byte_quota_and_the_inspector_a_budget() {
    let app = TestApp::spawn_with(|cfg| {
        cfg.bin_quota_bytes = 3 * 1024 * 1024;
        cfg.inspector_budget_bytes = 5 * 1024 * 1024;
        // One address here may hold the whole budget (shares: `inspector_isolation.rs`).
        cfg.inspector_address_share = 100;
        cfg.inspector_redirect_reserve = 0;
    })
    .await;
    let http = reqwest::Client::new();
    let (a, a_url) = new_bin(&app, &http).await;
    let mib = vec![b'a'; 1000 * 1024];
    for i in 0..5 {
        let r = http
            .post(format!("{a_url}?n={i}"))
            .body(mib.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let list = captured(&app, &http, &a).await;
    let kept: Vec<&str> = list.iter().map(|r| r["query"].as_str().unwrap()).collect();
    assert_eq!(kept, ["n=4", "n=3", "n=2"], "the oldest went first");

    // Bin A holds ~3 MiB of the 5 MiB budget: B fills the rest, then is refused.
    let (b, b_url) = new_bin(&app, &http).await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(
            http.post(&b_url)
                .body(mib.clone())
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
        );
    }
    assert_eq!(statuses, [200, 200, 507, 507]);
    assert_eq!(
        captured(&app, &http, &a).await.len(),
        3,
        "A keeps what it caught"
    );
    assert_eq!(captured(&app, &http, &b).await.len(), 2);
    let r = http.post(&b_url).body(mib.clone()).send().await.unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "insufficient_storage");
    app.stop().await;
}

/// The list comes a page at a time; bodies that would make a response too large come as
/// `"body_base64": null, "truncated": true` and are fetched alone.
#[tokio::test]
async fn the_list_is_paged_and_large_bodies_are_fetched_alone() {
    let app = TestApp::spawn().await;
    let http = reqwest::Client::new();
    let (id, url) = new_bin(&app, &http).await;
    for i in 0..30u8 {
        http.post(format!("{url}?n={i}"))
            .body(vec![i; 1000 * 1024])
            .send()
            .await
            .unwrap();
    }
    let first = http
        .get(format!(
            "{}/inspector/bins/{id}/requests?limit=20",
            app.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let bytes = first.bytes().await.unwrap();
    assert!(bytes.len() < 16 * 1024 * 1024, "{} bytes", bytes.len());
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let page = v["data"].as_array().unwrap();
    assert_eq!(page.len(), 20);
    let inline = page.iter().filter(|r| r["body_base64"].is_string()).count();
    assert!(inline >= 8, "the newest bodies come inline ({inline})");
    let cut = page
        .iter()
        .find(|r| r["truncated"] == true)
        .expect("a truncated row");
    assert!(cut["body_base64"].is_null());
    let body = http
        .get(format!(
            "{}/inspector/bins/{id}/requests/{}/body",
            app.base, cut["id"]
        ))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let n: u8 = cut["query"].as_str().unwrap()[2..].parse().unwrap();
    assert_eq!(body.len(), 1000 * 1024);
    assert!(body.iter().all(|b| *b == n));
    // The cursor walks the rest, each capture once.
    let all = captured(&app, &http, &id).await;
    let ids: std::collections::HashSet<i64> =
        all.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!((all.len(), ids.len()), (30, 30));
    let bad = http
        .get(format!(
            "{}/inspector/bins/{id}/requests?limit=500",
            app.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    app.stop().await;
}
