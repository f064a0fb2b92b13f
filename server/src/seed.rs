//! `posthorn seed-demo`: the Demo project, its people, two endpoints and a few hundred
//! deliveries in every status over the last 14 days. Running it again changes nothing.

use app::core::{EndpointId, EventId, ProjectId};
use app::{
    core::ids::{new_event_id, new_request_id},
    core::status::{DeliveryStatus as Status, ErrorKind as Kind, Trigger},
    db::{endpoints, projects, users},
    error::AppResult,
    model::EndpointView,
};
use chrono::{DateTime, Duration, Utc};
use rand::{rngs::StdRng, Rng, SeedableRng};
use sqlx::{PgConnection, PgPool, QueryBuilder};

pub const OWNER_EMAIL: &str = "owner@example.com";
pub const SUPPORT_EMAIL: &str = "support@example.com";
pub const DEMO_PASSWORD: &str = "demo-password";

const TYPES: [&str; 6] = [
    "payment.succeeded",
    "payment.confirmed",
    "message.created",
    "chat.opened",
    "contact.created",
    "subscription.cancelled",
];

pub async fn seed_demo(pool: &PgPool) -> AppResult<ProjectId> {
    let project_id = demo_project(pool).await?;
    let seeded = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM events WHERE project_id = $1) AS "seeded!""#,
        project_id.get()
    )
    .fetch_one(pool)
    .await?;
    if seeded {
        return Ok(project_id);
    }
    app::db::maintenance::ensure_partitions(pool, 15, 7).await?;
    let endpoints = demo_endpoints(pool, project_id).await?;
    let now = Utc::now();
    let (events, rows) = history(&endpoints, now);
    let mut tx = pool.begin().await?;
    insert_events(&mut tx, project_id, &events).await?;
    for chunk in rows.chunks(500) {
        insert_deliveries(&mut tx, project_id, now, chunk).await?;
    }
    tx.commit().await?;
    Ok(project_id)
}

/// The demo's people (an owner and a support agent) and its project, made once.
async fn demo_project(pool: &PgPool) -> AppResult<ProjectId> {
    let owner = users::upsert(pool, OWNER_EMAIL, DEMO_PASSWORD, "user").await?;
    users::upsert(pool, SUPPORT_EMAIL, DEMO_PASSWORD, "support").await?;
    Ok(
        match projects::find_by_owner_and_name(pool, owner.id, "Demo").await? {
            Some(p) => p.id,
            None => {
                projects::create(pool, "Demo", "business", owner.id)
                    .await?
                    .id
            }
        },
    )
}

/// The shop's payments endpoint and the CRM's, which takes everything at 20/s.
async fn demo_endpoints(pool: &PgPool, project_id: ProjectId) -> AppResult<[EndpointView; 2]> {
    let access = app::auth::system_access(project_id, "seed");
    let mut conn = pool.acquire().await?;
    let (orders, _) = endpoints::create(
        &mut conn,
        &access,
        endpoints::NewEndpoint {
            url: "https://hooks.shop.example.com/posthorn/payments",
            event_types: &[
                "payment.succeeded".into(),
                "payment.confirmed".into(),
                "subscription.cancelled".into(),
            ],
            description: "Shop: payments",
            rate_limit: None,
        },
    )
    .await?;
    let (crm, _) = endpoints::create(
        &mut conn,
        &access,
        endpoints::NewEndpoint {
            url: "https://crm.example.net/webhooks/botix",
            event_types: &["*".into()],
            description: "CRM: everything",
            rate_limit: Some(20),
        },
    )
    .await?;
    Ok([orders, crm])
}

type SeedEvent = (String, &'static str, serde_json::Value, DateTime<Utc>);

/// 240 events over the last 14 days and the attempts each subscribed endpoint made,
/// drawn from a fixed seed: the same history on every database.
fn history(endpoints: &[EndpointView; 2], now: DateTime<Utc>) -> (Vec<SeedEvent>, Vec<SeedRow>) {
    let mut rng = StdRng::seed_from_u64(7);
    let mut events = Vec::new();
    let mut rows = Vec::new();
    for i in 0..240 {
        let event_type = TYPES[i % TYPES.len()];
        let age = Duration::seconds(rng.gen_range(60..14 * 86_400 - 3600));
        let created = now - age;
        let event_id = new_event_id();
        let data = event_data(&mut rng, i, event_type);
        events.push((event_id.clone(), event_type, data, created));
        for ep in endpoints {
            if !app::core::event_type::subscribed(&ep.event_types, event_type) {
                continue;
            }
            let plan = outcome_plan(rng.gen_range(0..100));
            let mut at = created;
            for (n, (status, code, kind)) in plan.into_iter().enumerate() {
                let delay = [0, 30, 300, 1800, 7200, 21600][n.min(5)];
                at += Duration::seconds(delay);
                if at > now {
                    at = now - Duration::seconds(rng.gen_range(1..60));
                }
                rows.push(SeedRow {
                    created_at: at,
                    event_id: EventId::from(event_id.clone()),
                    event_type,
                    endpoint_id: ep.id,
                    url: ep.url.clone(),
                    attempt: n as i32 + 1,
                    status,
                    code,
                    kind,
                    duration: rng.gen_range(12..900),
                });
            }
        }
    }
    (events, rows)
}

/// The payload of the `i`th event; one contact in twelve carries markup, which every
/// page must show as text.
fn event_data(rng: &mut StdRng, i: usize, event_type: &str) -> serde_json::Value {
    match event_type {
        "contact.created" if i % 12 == 4 => {
            serde_json::json!({"contact_id": i, "name": "<script>alert('xss')</script><img src=x onerror=alert(1)>"})
        }
        t if t.starts_with("payment") => {
            serde_json::json!({"payment_id": format!("pay_{i:05}"), "amount": rng.gen_range(100..99_000), "currency": "EUR"})
        }
        _ => serde_json::json!({"id": i, "channel": "web", "text": "Hello from the demo"}),
    }
}

/// The attempts of one delivery by a roll of 0..100: (status, code, error kind) each.
fn outcome_plan(roll: u32) -> Vec<(Status, Option<i16>, Option<Kind>)> {
    match roll {
        0..=54 => vec![(Status::Succeeded, Some(200), None)],
        55..=66 => vec![
            (Status::Failed, Some(503), Some(Kind::HttpStatus)),
            (Status::Succeeded, Some(200), None),
        ],
        67..=74 => vec![
            (Status::Failed, None, Some(Kind::Timeout)),
            (Status::Failed, None, Some(Kind::Connect)),
            (Status::Succeeded, Some(204), None),
        ],
        75..=82 => vec![(Status::DeadLetter, Some(404), Some(Kind::HttpStatus))],
        83..=88 => vec![(Status::Failed, Some(500), Some(Kind::HttpStatus)); 5]
            .into_iter()
            .chain([(Status::DeadLetter, Some(500), Some(Kind::HttpStatus))])
            .collect(),
        89..=92 => vec![(Status::DeadLetter, None, Some(Kind::Dns))],
        93..=96 => vec![
            (Status::Failed, Some(429), Some(Kind::HttpStatus)),
            (Status::Pending, None, None),
        ],
        _ => vec![(Status::InFlight, None, None)],
    }
}

async fn insert_events(
    conn: &mut PgConnection,
    project_id: ProjectId,
    events: &[SeedEvent],
) -> AppResult<()> {
    let mut q = QueryBuilder::new(
        "INSERT INTO events (event_id, project_id, event_type, data, deliveries, created_at) ",
    );
    q.push_values(events, |mut b, (id, t, data, at)| {
        b.push_bind(id)
            .push_bind(project_id)
            .push_bind(*t)
            .push_bind(data.to_string())
            .push_unseparated("::json")
            .push_bind(2)
            .push_bind(*at);
    });
    q.build().execute(&mut *conn).await?;
    Ok(())
}

async fn insert_deliveries(
    conn: &mut PgConnection,
    project_id: ProjectId,
    now: DateTime<Utc>,
    rows: &[SeedRow],
) -> AppResult<()> {
    let mut q = QueryBuilder::new(
        "INSERT INTO deliveries (created_at, project_id, event_id, event_type, endpoint_id, target_url, attempt,
         trigger, status, scheduled_at, started_at, finished_at, duration_ms, lease_expires_at, claimed_by, request_id,
         request_headers, response_status, response_headers, response_body, error_kind, error, chain_started_at) ",
    );
    q.push_values(rows, |mut b, r| {
        let done = !r.status.is_live();
        let scheduled = if r.status == Status::Pending {
            now + Duration::hours(3)
        } else {
            r.created_at
        };
        let request_id = new_request_id();
        let headers = serde_json::json!([
            ["Content-Type", "application/json"],
            ["X-Event-Id", r.event_id],
            ["X-Event-Type", r.event_type],
            ["X-Delivery-Attempt", r.attempt.to_string()],
            ["X-Request-Id", request_id],
        ]);
        b.push_bind(r.created_at)
            .push_bind(project_id)
            .push_bind(&r.event_id)
            .push_bind(r.event_type)
            .push_bind(r.endpoint_id)
            .push_bind(&r.url)
            .push_bind(r.attempt)
            .push_bind(Trigger::Auto)
            .push_bind(r.status)
            .push_bind(scheduled)
            .push_bind((r.status != Status::Pending).then_some(r.created_at))
            .push_bind(done.then(|| r.created_at + Duration::milliseconds(r.duration as i64)))
            .push_bind(done.then_some(r.duration))
            .push_bind((r.status == Status::InFlight).then(|| now + Duration::days(1)))
            .push_bind((r.status == Status::InFlight).then_some("demo"))
            .push_bind(request_id_for(&headers))
            .push_bind(done.then_some(headers.clone()))
            .push_bind(r.code)
            .push_bind(
                r.code.map(|_| {
                    serde_json::json!([["content-type", "text/plain"], ["server", "demo"]])
                }),
            )
            .push_bind(r.code.map(response_body))
            .push_bind(r.kind)
            .push_bind(r.kind.map(|k| error_text(k, r.code)))
            .push_bind(r.created_at);
    });
    q.build().execute(&mut *conn).await?;
    Ok(())
}

/// What the demo's receivers answered with a status code; the 404 page carries a script
/// that the detail page must show as text.
fn response_body(code: i16) -> String {
    match code {
        200..=299 => r#"{"ok":true}"#.to_string(),
        404 => {
            "<html><body><h1>Not Found</h1><script>alert('from receiver')</script></body></html>"
                .to_string()
        }
        429 => r#"{"error":"slow down"}"#.to_string(),
        _ => "upstream unavailable".to_string(),
    }
}

fn error_text(kind: Kind, code: Option<i16>) -> String {
    match (kind, code) {
        (Kind::HttpStatus, Some(c)) => format!("endpoint answered {c}"),
        (Kind::Timeout, _) => "no complete response within 30000 ms".into(),
        (Kind::Connect, _) => "error sending request: connection refused".into(),
        (Kind::Dns, _) => "dns error: failed to lookup address information".into(),
        _ => kind.as_str().to_string(),
    }
}

fn request_id_for(headers: &serde_json::Value) -> String {
    headers
        .as_array()
        .and_then(|h| h.iter().find(|p| p[0] == "X-Request-Id"))
        .and_then(|p| p[1].as_str())
        .unwrap_or_default()
        .to_string()
}

struct SeedRow {
    created_at: DateTime<Utc>,
    event_id: EventId,
    event_type: &'static str,
    endpoint_id: EndpointId,
    url: String,
    attempt: i32,
    status: Status,
    code: Option<i16>,
    kind: Option<Kind>,
    duration: i32,
}
