//! Ingest → receipt latency through the public API, one endpoint, alone or beside
//! another project's backlog.

use std::time::{Duration, Instant};

use super::{
    measure::{pg_counters, statements_report, statements_reset, Writes},
    percentile, queue_table,
    rig::Rig,
};

/// What waits beside the measured project, to show it costs that project nothing.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Backlog {
    None,
    /// Attempts held by a disabled endpoint (what auto-disable leaves).
    Held,
    /// Due attempts queued behind an endpoint that answers in 1 s.
    Deep,
    /// Another project's 3 bulk replays of 100,000 pairs each to a disabled endpoint.
    Replays,
    /// Another project's 3 keyed batches of 100 events to 500 endpoints, sent at once as
    /// the measurement starts.
    KeyedBatches,
    /// The same batches without ordering keys: the fan-out alone, as a control.
    Batches,
    /// Another project sending, back to back from 4 clients, events that meet the
    /// costliest schema and filters this server accepts.
    CostlyDefinitions,
}

/// Another project's endpoint with `rows` attempts: held (then disabled) or due (slow).
pub(super) async fn make_backlog(rig: &Rig, kind: Backlog, rows: i64) {
    if matches!(kind, Backlog::Replays) {
        return super::neighbours::replays(rig).await;
    }
    if matches!(
        kind,
        Backlog::None | Backlog::KeyedBatches | Backlog::Batches | Backlog::CostlyDefinitions
    ) || rows == 0
    {
        return;
    }
    let key = Rig::project(&rig.db_url);
    let url = rig.receiver_url("/slow");
    let endpoint = rig.endpoint(&key, &url).await;
    let (project, event): (i64, String) = {
        let id = Rig::send(&rig.client, &rig.server.base, &key, 0, 0)
            .await
            .expect("backlog event");
        sqlx::query_as("SELECT project_id, event_id FROM events WHERE event_id = $1")
            .bind(&id)
            .fetch_one(&rig.pool)
            .await
            .unwrap()
    };
    let started = Instant::now();
    let queue = queue_table(&rig.pool).await;
    sqlx::query(&format!(
        "INSERT INTO {queue} (project_id, event_id, event_type, endpoint_id, target_url, attempt,
                              trigger, status, scheduled_at, request_id)
         SELECT $1, $2, 'order.paid', $3, $4, 1, 'auto', 'pending',
                now() - interval '1 hour' + g * interval '1 ms', 'req_backlog_' || g
         FROM generate_series(1, $5) g",
    ))
    .bind(project)
    .bind(&event)
    .bind(endpoint)
    .bind(&url)
    .bind(rows)
    .execute(&rig.pool)
    .await
    .unwrap();
    if matches!(kind, Backlog::Held) {
        rig.disable(&key, endpoint).await;
    }
    // As autovacuum would within a minute of such a change.
    sqlx::query(&format!("VACUUM ANALYZE {queue}"))
        .execute(&rig.pool)
        .await
        .unwrap();
    // A backlog grows over hours and its pages reach the disk meanwhile; written in
    // seconds here, they would otherwise be flushed by a checkpoint during the
    // measurement (seen as twice the WAL flushes per event and a slower p99).
    sqlx::query("CHECKPOINT").execute(&rig.pool).await.unwrap();
    println!(
        "backlog: {rows} {} attempts of another project in {:.1} s",
        match kind {
            Backlog::Held => "held (endpoint disabled)",
            _ => "due, behind a 1 s endpoint",
        },
        started.elapsed().as_secs_f64()
    );
}

/// Ingest → receipt latency through the public API, one endpoint.
pub async fn latency(
    rate: u64,
    seconds: u64,
    backlog: Backlog,
    (rows, keys): (i64, u64),
    env: Vec<(String, String)>,
) {
    let rig = Rig::start(&env).await;
    let url = rig.receiver_url("/hook");
    rig.endpoint(&rig.key, &url).await;
    make_backlog(&rig, backlog, rows).await;
    let neighbours = Neighbours::prepare(&rig, backlog).await;
    // Warm the connections and caches, unmeasured.
    rig.paced(&rig.key, rate.min(100), 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let writes = Writes::take(&rig.pool).await;
    let before = rig.cpu();
    let counters = pg_counters(&rig.pool).await;
    let counting = statements_reset(&rig.pool).await;
    let running = neighbours.start(&rig, seconds);
    let (sent, refused) = rig.paced_keyed(&rig.key, rate, seconds, keys).await;
    for task in running {
        let _ = task.await;
    }
    rig.wait_for(
        "SELECT count(*) FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
         WHERE d.status IN ('pending', 'in_flight') AND e.url LIKE '%/hook'",
        |n| n == 0,
        Duration::from_secs(30),
    )
    .await;
    let after = rig.cpu();
    let counters_after = pg_counters(&rig.pool).await;
    let writes_after = Writes::take(&rig.pool).await;
    Writes::stored(&rig.pool).await;
    if matches!(backlog, Backlog::Replays) {
        super::neighbours::replays_report(&rig).await;
    }
    statements_report(&rig.pool, counting, sent.len() as u64, "event").await;
    let Rig {
        receiver, server, ..
    } = rig;
    drop(server);
    let (first, _) = receiver.finish();
    let lat = report_latency((rate, seconds, keys), &sent, refused, &first);
    let events = sent.len() as i64;
    println!(
        "PostgreSQL: {:.2} commits and {:.2} WAL flushes per event",
        (counters_after.0 - counters.0) as f64 / events.max(1) as f64,
        (counters_after.1 - counters.1) as f64 / events.max(1) as f64
    );
    writes.report(&writes_after, events.max(1) as u64, "event (one endpoint)");
    before.report(&after, lat.len() as u64, "delivery");
}

/// The other projects that send while the measured one does: batches to 500 endpoints,
/// or events meeting the costliest definitions.
struct Neighbours {
    backlog: Backlog,
    wide: Option<String>,
    costly: Option<String>,
}

impl Neighbours {
    async fn prepare(rig: &Rig, backlog: Backlog) -> Neighbours {
        let wide = match backlog {
            Backlog::KeyedBatches | Backlog::Batches => {
                Some(super::neighbours::wide_project(rig).await)
            }
            _ => None,
        };
        let costly = match backlog {
            Backlog::CostlyDefinitions => Some(super::costly::setup(rig).await),
            _ => None,
        };
        Neighbours {
            backlog,
            wide,
            costly,
        }
    }

    /// Starts them sending; the measurement waits for the tasks once its own events are in.
    fn start(self, rig: &Rig, seconds: u64) -> Vec<tokio::task::JoinHandle<()>> {
        let batches = self.wide.map(|key| {
            tokio::spawn(super::neighbours::batches(
                rig.client.clone(),
                rig.server.base.clone(),
                key,
                matches!(self.backlog, Backlog::KeyedBatches),
            ))
        });
        let costly = self.costly.map(|key| {
            tokio::spawn(super::costly::send(
                rig.client.clone(),
                rig.server.base.clone(),
                key,
                seconds,
            ))
        });
        batches.into_iter().chain(costly).collect()
    }
}

/// Prints how many events went in and came out, and the latency from the intended send
/// to the receipt; returns the latencies in ms, sorted.
fn report_latency(
    (rate, seconds, keys): (u64, u64, u64),
    sent: &[(String, i64)],
    refused: u64,
    first: &std::collections::HashMap<String, i64>,
) -> Vec<f64> {
    let mut lat: Vec<f64> = sent
        .iter()
        .filter_map(|(id, at)| first.get(id).map(|r| (r - at) as f64 / 1000.0))
        .collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{rate} events/s for {seconds} s through POST /public/v1/events{}: {} accepted, {refused} refused, {} received",
        match keys {
            0 => String::new(),
            n => format!(" over {n} ordering keys"),
        },
        sent.len(),
        lat.len()
    );
    println!(
        "intended send → receipt: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&lat, 0.50),
        percentile(&lat, 0.90),
        percentile(&lat, 0.99),
        percentile(&lat, 1.0)
    );
    lat
}
