//! Erasure of one data subject on a large generated history, through the public API:
//! `POST /public/v1/erasures`, then `GET /public/v1/erasures/{id}` until it is done.

use app::core::ProjectId;
use std::time::{Duration, Instant};

use app::db;

use crate::{dashboard::generate, scratch_db, serve_app};

/// Subjects per project-1 event: event `k` names `user:{k % SUBJECTS}`.
const SUBJECTS: i64 = 50_000;

/// Generates `rows` attempts (with response bodies) and their `rows / 2` events, each
/// naming one subject, then erases `runs` subjects of project 1 one after another.
pub async fn erase(rows: i64, projects: i64, runs: usize, reuse: Option<String>) {
    let (pool, url) = match reuse {
        Some(url) => (db::connect(&url, 8).await.unwrap(), url),
        None => {
            let (pool, url) = scratch_db().await;
            generate(&pool, &url, rows, projects, true).await;
            generate_events(&pool, &url, rows, projects).await;
            (pool, url)
        }
    };
    let (attempts, events): (i64, i64) =
        sqlx::query_as("SELECT (SELECT count(*) FROM deliveries), (SELECT count(*) FROM events)")
            .fetch_one(&pool)
            .await
            .unwrap();
    let addr = serve_app(&pool, &url).await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let runner = tokio::spawn(server::replayer::run(pool.clone(), stopped));
    let (key, _) = db::api_keys::create(&pool, ProjectId::new(1), "bench")
        .await
        .unwrap();
    let api = Api {
        http: reqwest::Client::new(),
        key,
        url: format!("http://{addr}/public/v1/erasures"),
    };
    println!("\n{attempts} attempts, {events} events; one subject of project 1 at a time");
    println!("| subject | events | attempts | time to done (ms) |");
    println!("|---|---|---|---|");
    let mut times = Vec::new();
    // Subjects of project 1 (k % 5 = 0), not erased by an earlier run on this database.
    let taken: i64 = sqlx::query_scalar("SELECT count(*) FROM erasures")
        .fetch_one(&pool)
        .await
        .unwrap();
    for run in 0..runs as i64 {
        times.push(
            api.erase_one(format!("user:{}", 5 * (1 + taken + run)))
                .await,
        );
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "\nmedian {:.0} ms from POST /erasures to `done` (runs: {runs})",
        times[times.len() / 2]
    );
    // One large subject: 10,000 of project 1's events (with their 20,000 attempts).
    let bulk = format!("bulk:{taken}");
    sqlx::query(
        "UPDATE events SET subjects = subjects || $1::text
          WHERE id IN (SELECT id FROM events WHERE project_id = 1 AND erased_at IS NULL
                        ORDER BY id DESC LIMIT 10000)",
    )
    .bind(&bulk)
    .execute(&pool)
    .await
    .unwrap();
    api.erase_one(bulk).await;
    let _ = stop.send(true);
    let _ = runner.await;
}

/// The attempts' `rows / 2 + 1` events, each naming one subject, in chunks of 500,000.
async fn generate_events(pool: &sqlx::PgPool, url: &str, rows: i64, projects: i64) {
    let t = Instant::now();
    let events = rows / 2 + 1;
    let chunk = 500_000i64;
    let mut from = 0;
    while from < events {
        let to = (from + chunk - 1).min(events - 1);
        // The project of an event is that of its first attempt (row 2k).
        sqlx::query(
            "INSERT INTO events (event_id, project_id, event_type, data, deliveries, created_at, subjects)
             SELECT 'evt_' || lpad(to_hex(k), 24, '0'),
                    CASE WHEN (2 * k) % 10 = 0 THEN 1 ELSE 2 + (2 * k * 7919) % ($3 - 1) END,
                    'payment.succeeded',
                    json_build_object('customer', 'user:' || (k % $4), 'email', 'person' || (k % $4) || '@example.com',
                                      'amount', k % 9000, 'note', repeat('x', 40)),
                    2, now() - interval '14 days' * (1 - (2 * k)::float8 / $5) + interval '1 second',
                    ARRAY['user:' || (k % $4)]
               FROM generate_series($1::bigint, $2::bigint) k",
        )
        .bind(from)
        .bind(to)
        .bind(projects)
        .bind(SUBJECTS)
        .bind(rows as f64)
        .execute(pool)
        .await
        .unwrap();
        from = to + 1;
    }
    sqlx::query("VACUUM ANALYZE events")
        .execute(pool)
        .await
        .unwrap();
    println!(
        "generated {events} events in {:.0} s; database {url}",
        t.elapsed().as_secs_f64()
    );
}

/// The erasures API as project 1's key sees it.
struct Api {
    http: reqwest::Client,
    key: String,
    url: String,
}

impl Api {
    /// Asks for the erasure of `subject` and polls it until done; prints its row and
    /// returns the milliseconds it took.
    async fn erase_one(&self, subject: String) -> f64 {
        let t = Instant::now();
        let created = json(
            self.http
                .post(&self.url)
                .bearer_auth(&self.key)
                .json(&serde_json::json!({ "subject": subject })),
        )
        .await;
        let id = created["id"].as_i64().expect("an erasure id");
        loop {
            let e = json(
                self.http
                    .get(format!("{}/{id}", self.url))
                    .bearer_auth(&self.key),
            )
            .await;
            if e["status"] == "done" {
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                println!(
                    "| {subject} | {} | {} | {ms:.0} |",
                    e["events"], e["attempts"]
                );
                return ms;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Sends the request and reads its answer as JSON.
async fn json(request: reqwest::RequestBuilder) -> serde_json::Value {
    request.send().await.unwrap().json().await.unwrap()
}
