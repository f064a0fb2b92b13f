//! Debian's Prometheus scraping a running server with the metrics token, and loading the
//! alerting rules of `deploy/prometheus/` (whose behaviour `promtool test rules` checks in
//! `make test`): what an operator's own Prometheus would do.

use crate::common::{Receiver, TestApp};

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

fn repository() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Asks Prometheus' HTTP API until `ok` holds for its `data`, or fails after 30 s.
async fn until(base: &str, path: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = Value::Null;
    while Instant::now() < deadline {
        if let Ok(r) = http.get(format!("{base}{path}")).send().await {
            if let Ok(v) = r.json::<Value>().await {
                if ok(&v["data"]) {
                    return v["data"].clone();
                }
                last = v;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("Prometheus: no {what}; last answer {last}");
}

fn first_value(data: &Value) -> Option<f64> {
    data["result"][0]["value"][1].as_str()?.parse().ok()
}

#[tokio::test]
async fn prometheus_scrapes_the_server_with_its_token_and_loads_the_alert_rules() {
    let prometheus = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("prometheus is not installed: `make test` installs it (Debian's prometheus)");
    let app = TestApp::spawn_with(|c| {
        c.metrics_token = Some(app::cfg::Redacted("scrape-token".into()));
    })
    .await;
    let rx = Receiver::start().await;
    let (project, key) = app.project("business").await;
    app.endpoint(project, &rx.url).await;
    assert_eq!(app.post_events(&key, 3, 3).await, vec![202; 3]);
    rx.wait_for(3, Duration::from_secs(20)).await;

    let dir = tempfile::tempdir().unwrap();
    let rules = repository().join("deploy/prometheus/posthorn.rules.yml");
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: posthorn\n    authorization:\n      credentials: scrape-token\n    \
         static_configs:\n      - targets: ['{}']\n",
        rules.display(),
        app.addr
    );
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, config).unwrap();
    let port = crate::common::process::free_port();
    let mut child = Command::new(prometheus)
        .arg(format!("--config.file={}", config_path.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    let base = format!("http://127.0.0.1:{port}/api/v1");

    let up = until(
        &base,
        "/query?query=up%7Bjob%3D%22posthorn%22%7D",
        "successful scrape",
        |d| first_value(d) == Some(1.0),
    )
    .await;
    assert_eq!(up["result"][0]["metric"]["instance"], app.addr.to_string());
    let sent = until(
        &base,
        "/query?query=posthorn_attempts_total%7Boutcome%3D%22succeeded%22%7D",
        "attempts scraped",
        |d| first_value(d) == Some(3.0),
    )
    .await;
    assert_eq!(sent["result"].as_array().unwrap().len(), 1);
    until(
        &base,
        "/query?query=posthorn_http_requests_total%7Broute%3D%22%2Fpublic%2Fv1%2Fevents%22%2Cstatus%3D%222xx%22%7D",
        "the API's requests by route",
        |d| first_value(d) == Some(3.0),
    )
    .await;
    until(
        &base,
        "/query?query=posthorn_connections_opened_total",
        "connections opened to the receiver",
        |d| first_value(d).is_some_and(|n| n >= 1.0),
    )
    .await;
    until(
        &base,
        "/query?query=posthorn_queue_depth",
        "the queue's depth",
        |d| first_value(d) == Some(0.0),
    )
    .await;
    let rules = until(&base, "/rules", "rules evaluated", |d| {
        let rules = &d["groups"][0]["rules"];
        rules.as_array().is_some_and(|r| {
            !r.is_empty()
                && r.iter()
                    .all(|r| r["lastEvaluation"].as_str() != Some("0001-01-01T00:00:00Z"))
        })
    })
    .await;
    let group = &rules["groups"][0];
    assert_eq!(group["name"], "posthorn");
    for rule in group["rules"].as_array().unwrap() {
        assert_eq!(rule["health"], "ok", "{rule}");
        // A healthy, quiet installation: nothing fires.
        assert_eq!(rule["state"], "inactive", "{rule}");
    }
    dashboard_queries_run(&base).await;
    let _ = child.kill();
    let _ = child.wait();
    app.stop().await;
}

/// Every query of the Grafana dashboard (`deploy/grafana/posthorn.json`) runs against
/// what was scraped, and every metric it names is one the server exports.
async fn dashboard_queries_run(base: &str) {
    let path = repository().join("deploy/grafana/posthorn.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let names = until(base, "/label/__name__/values", "metric names", |d| {
        d.as_array().is_some_and(|a| !a.is_empty())
    })
    .await;
    let names: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let http = reqwest::Client::new();
    let mut queries = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "1m");
            let answer: Value = http
                .get(format!("{base}/query"))
                .query(&[("query", expr.as_str())])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(
                answer["status"], "success",
                "{}: {expr}: {answer}",
                panel["title"]
            );
            let named = expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("posthorn_"));
            for metric in named {
                assert!(
                    names.contains(&metric),
                    "{}: {metric} is not exported",
                    panel["title"]
                );
            }
            queries += 1;
        }
    }
    assert!(queries >= 14, "{queries} queries");
}
