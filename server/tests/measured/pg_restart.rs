//! A PostgreSQL restart under load loses no delivery. The test runs its own private
//! cluster so no other test sees the outage.

use crate::common;
use app::core::ProjectId;

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    process::Command,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use common::{header, Receiver, TestApp, TestDb};

fn pg_bin() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL server binaries under /usr/lib/postgresql")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop().expect("initdb")
}

fn as_postgres(bin: &Path, args: &[&str]) -> std::process::ExitStatus {
    let root = unsafe_is_root();
    let mut cmd = if root {
        Command::new("runuser")
    } else {
        Command::new(bin)
    };
    if root {
        cmd.args(["-u", "postgres", "--"]).arg(bin);
    }
    cmd.args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
}

fn unsafe_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

struct Cluster {
    dir: PathBuf,
    port: u16,
    bin: PathBuf,
}

impl Cluster {
    fn start() -> Cluster {
        let bin = pg_bin();
        let dir = std::env::temp_dir().join(format!("posthorn-pg-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        if unsafe_is_root() {
            Command::new("chown")
                .args(["postgres", dir.to_str().unwrap()])
                .status()
                .unwrap();
        }
        assert!(as_postgres(
            &bin.join("initdb"),
            &[
                "-D",
                dir.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust"
            ]
        )
        .success());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = Cluster { dir, port, bin };
        c.ctl(&["start"]);
        c
    }

    fn ctl(&self, action: &[&str]) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.dir.display()
        );
        let mut args = vec!["-D", self.dir.to_str().unwrap(), "-o", &opts, "-w"];
        args.extend_from_slice(action);
        assert!(
            as_postgres(&self.bin.join("pg_ctl"), &args).success(),
            "pg_ctl {action:?}"
        );
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = as_postgres(
            &self.bin.join("pg_ctl"),
            &["-D", self.dir.to_str().unwrap(), "-m", "immediate", "stop"],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn a_postgres_restart_under_load_loses_no_delivery() {
    let _alone = crate::shared().await;
    let cluster = Cluster::start();
    let db = TestDb::on(&cluster.url()).await;
    let app = TestApp::spawn_on(db, |_| {}, true).await;
    let rx = Receiver::start().await;
    let (project, _) = app.project("business").await;
    app.endpoint(project, &rx.url).await;

    // A client that keeps sending events and retries when the database is away.
    let accepted = Arc::new(Mutex::new(Vec::<String>::new()));
    let producer = {
        let pool = app.pool.clone();
        let accepted = accepted.clone();
        tokio::spawn(async move {
            let t = app::core::event_type::EventType::parse("order.created").unwrap();
            for i in 0..300 {
                loop {
                    match app::db::events::ingest(
                        &pool,
                        ProjectId::new(project),
                        &t,
                        &format!("{{\"i\":{i}}}"),
                        Some(&format!("k{i}")),
                    )
                    .await
                    {
                        Ok(e) => {
                            accepted.lock().unwrap().push(String::from(e.event_id));
                            break;
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    while rx.seen().len() < 60 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A crash, not a polite shutdown: no checkpoint, connections cut mid-transaction.
    cluster.ctl(&["-m", "immediate", "stop"]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster.ctl(&["start"]);
    producer.await.unwrap();

    let accepted: HashSet<String> = accepted.lock().unwrap().iter().cloned().collect();
    assert_eq!(accepted.len(), 300);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (done, open): (i64, i64) = sqlx::query_as(
            "SELECT count(DISTINCT event_id) FILTER (WHERE status = 'succeeded'),
                    count(*) FILTER (WHERE status IN ('pending', 'in_flight'))
             FROM deliveries",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap_or((0, 1));
        if done == 300 && open == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{done}/300 delivered, {open} open after the restart"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let received: HashSet<String> = rx
        .seen()
        .iter()
        .map(|r| header(r, "x-event-id").to_string())
        .collect();
    assert!(
        accepted.is_subset(&received),
        "every accepted event reached the receiver"
    );
    app.stop().await;
}
