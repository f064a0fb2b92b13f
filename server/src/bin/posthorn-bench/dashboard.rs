//! The dashboard on a large generated history: the list and search queries the page
//! runs, their plans, and the page's time to first byte.

use app::core::{EndpointId, ProjectId};
use std::time::Instant;

use app::{db, server_fns::deliveries::DeliveryFilter};

use crate::{scratch_db, serve_app};

/// Generates `rows` attempts over 14 days across `projects` projects (project 1, the
/// busiest, gets a tenth of them), then times the dashboard's list and search queries.
pub async fn queries(rows: i64, projects: i64, reuse: Option<String>) {
    let (pool, url) = match reuse {
        Some(url) => (db::connect(&url, 8).await.unwrap(), url),
        None => {
            let (pool, url) = scratch_db().await;
            generate(&pool, &url, rows, projects, false).await;
            (pool, url)
        }
    };
    let (event_id, request_id): (String, String) =
        sqlx::query_as("SELECT event_id, request_id FROM deliveries WHERE project_id = 1 ORDER BY created_at DESC OFFSET 5000 LIMIT 1")
            .fetch_one(&pool).await.unwrap();
    time_lists(&pool, filters(&event_id, &request_id)).await;
    ttfb(&pool, &url).await;
    explain(&pool, &request_id).await;
}

/// The views timed: each filter of the page alone, on the busiest project.
fn filters(event_id: &str, request_id: &str) -> Vec<(&'static str, DeliveryFilter)> {
    let f = DeliveryFilter::default;
    vec![
        ("unfiltered", f()),
        (
            "status=dead_letter",
            DeliveryFilter {
                status: Some(app::core::status::DeliveryStatus::DeadLetter),
                ..f()
            },
        ),
        (
            "endpoint",
            DeliveryFilter {
                endpoint: Some(EndpointId::new(11)),
                ..f()
            },
        ),
        (
            "event_type",
            DeliveryFilter {
                event_type: Some("chat.opened".into()),
                ..f()
            },
        ),
        (
            "search event id",
            DeliveryFilter {
                q: Some(event_id.to_string()),
                ..f()
            },
        ),
        (
            "search request id",
            DeliveryFilter {
                q: Some(request_id.to_string()),
                ..f()
            },
        ),
        (
            "code=5xx",
            DeliveryFilter {
                code: Some("5xx".into()),
                ..f()
            },
        ),
        (
            "error_kind=http_status",
            DeliveryFilter {
                error_kind: Some(app::core::status::ErrorKind::HttpStatus),
                ..f()
            },
        ),
        (
            "last hour",
            DeliveryFilter {
                since: Some(chrono::Utc::now() - chrono::Duration::hours(1)),
                ..f()
            },
        ),
    ]
}

/// The first page of each view, 15 times: median and p90.
async fn time_lists(pool: &sqlx::PgPool, cases: Vec<(&str, DeliveryFilter)>) {
    let access = app::auth::system_access(ProjectId::new(1), "bench");
    println!("| query (busiest project, 51 rows) | median ms | p90 ms | rows |");
    println!("|---|---|---|---|");
    for (name, filter) in cases {
        let mut times = Vec::new();
        let mut n = 0;
        for _ in 0..15 {
            let t = Instant::now();
            n = db::deliveries::list(pool, &access, &filter, 14, 51)
                .await
                .unwrap()
                .len();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("| {name} | {:.2} | {:.2} | {n} |", times[7], times[13]);
    }
}

/// The plans of the unfiltered, status and request-id lists.
async fn explain(pool: &sqlx::PgPool, request_id: &str) {
    for (label, sql) in [
        ("unfiltered", format!("SELECT {} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id WHERE d.project_id = 1 AND d.created_at >= now() - make_interval(days => 14) ORDER BY d.created_at DESC, d.id DESC LIMIT 51", db::deliveries::ROW_COLUMNS)),
        ("status", format!("SELECT {} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id WHERE d.project_id = 1 AND d.created_at >= now() - make_interval(days => 14) AND d.status = 'dead_letter' ORDER BY d.created_at DESC, d.id DESC LIMIT 51", db::deliveries::ROW_COLUMNS)),
        ("request id", format!("SELECT {} FROM deliveries d LEFT JOIN endpoints e ON e.id = d.endpoint_id WHERE d.project_id = 1 AND d.created_at >= now() - make_interval(days => 14) AND d.request_id = '{request_id}' ORDER BY d.created_at DESC, d.id DESC LIMIT 51", db::deliveries::ROW_COLUMNS)),
    ] {
        let plan: Vec<String> = sqlx::query_scalar(&format!("EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, SUMMARY ON) {sql}")).fetch_all(pool).await.unwrap();
        println!("\nEXPLAIN ANALYZE, {label}:\n{}", plan.iter().filter(|l| !l.contains("Subplans Removed") ).take(14).cloned().collect::<Vec<_>>().join("\n"));
    }
}

/// Fills a scratch database with `rows` attempts over 14 days across `projects` projects
/// (project 1, the busiest, gets a tenth of them; event `k` has rows `2k` and `2k + 1`);
/// `bodies`: finished attempts carry a short response body.
pub async fn generate(pool: &sqlx::PgPool, url: &str, rows: i64, projects: i64, bodies: bool) {
    let t = Instant::now();
    sqlx::query("INSERT INTO projects (name, plan) SELECT 'p' || g, 'business' FROM generate_series(1, $1) g")
        .bind(projects).execute(pool).await.unwrap();
    let chunk = 1_000_000i64;
    let mut from = 1;
    while from <= rows {
        let to = (from + chunk - 1).min(rows);
        // Finished rows into the log, waiting ones (s = 19) into the queue.
        for (table, waiting) in [("delivery_log", false), ("delivery_queue", true)] {
            sqlx::query(&format!(
            "INSERT INTO {table} (created_at, project_id, event_id, event_type, endpoint_id, target_url, attempt,
                trigger, status, scheduled_at, started_at, finished_at, duration_ms, request_id, response_status,
                error_kind, error, response_body)
             SELECT ts, p, 'evt_' || lpad(to_hex(g / 2), 24, '0'),
                (ARRAY['payment.succeeded','payment.confirmed','message.created','chat.opened','contact.created','subscription.cancelled'])[1 + h % 6],
                p * 10 + g % 3, 'https://example.com/hook', 1 + g % 2, 'auto',
                CASE WHEN s < 16 THEN 'succeeded' WHEN s < 18 THEN 'failed' WHEN s < 19 THEN 'dead_letter' ELSE 'pending' END,
                ts, ts, ts + interval '120 ms', 120, 'req_' || lpad(to_hex(g), 26, '0'),
                CASE WHEN s < 16 THEN 200 WHEN s < 18 THEN 503 WHEN s < 19 THEN 404 END,
                CASE WHEN s BETWEEN 16 AND 18 THEN 'http_status' END,
                CASE WHEN s BETWEEN 16 AND 18 THEN 'endpoint answered an error' END,
                CASE WHEN {bodies} AND s < 19 THEN '{{\"received\":\"' || g || '\"}}' END
             FROM generate_series($1::bigint, $2::bigint) g,
                  LATERAL (SELECT now() - interval '14 days' * (1 - g::float8 / $3) + interval '1 second' AS ts,
                                  CASE WHEN g % 10 = 0 THEN 1 ELSE 2 + (g * 7919) % ($4 - 1) END AS p,
                                  (hashint8(g) & 1023) % 20 AS s, (hashint8(g + 1) & 1023) % 6 AS h) x
             WHERE (s = 19) = {waiting}",
        ))
        .bind(from).bind(to).bind(rows as f64).bind(projects)
        .execute(pool).await.unwrap();
        }
        eprintln!("generated {to} rows ({:.0} s)", t.elapsed().as_secs_f64());
        from = to + 1;
    }
    sqlx::query("VACUUM ANALYZE delivery_log, delivery_queue")
        .execute(pool)
        .await
        .unwrap();
    println!(
        "generated {rows} rows across {projects} projects in {:.0} s; database {url}",
        t.elapsed().as_secs_f64()
    );
}

/// Time to first byte of `/developers/deliveries` for a signed-in owner of project 1.
async fn ttfb(pool: &sqlx::PgPool, url: &str) {
    let addr = serve_app(pool, url).await;
    let user = db::users::upsert(pool, "ttfb@example.com", "bench-password", "user")
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO memberships (project_id, user_id) VALUES (1, $1) ON CONFLICT DO NOTHING",
    )
    .bind(user.id)
    .execute(pool)
    .await
    .unwrap();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = http
        .post(format!("http://{addr}/api/login"))
        .form(&[
            ("email", "ttfb@example.com"),
            ("password", "bench-password"),
        ])
        .send()
        .await
        .unwrap();
    let cookie = res
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("posthorn_session="))
        .map(|v| v.split(';').next().unwrap().to_string())
        .expect("session cookie");
    let mut first = Vec::new();
    let mut full = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        let res = http
            .get(format!("http://{addr}/developers/deliveries"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        first.push(t.elapsed().as_secs_f64() * 1000.0);
        let body = res.text().await.unwrap();
        assert!(body.contains("delivery-row"), "the page lists deliveries");
        full.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    first.sort_by(|a, b| a.partial_cmp(b).unwrap());
    full.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("\n/developers/deliveries (50 rows, server-rendered whole): time to first byte median {:.1} ms (p90 {:.1}), full page median {:.1} ms", first[7], first[13], full[7]);
}
