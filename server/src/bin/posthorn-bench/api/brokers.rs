//! Broker destinations for `api-ingest --to redis|nats|mqtt`: a private Redis, NATS (with
//! JetStream and a stream taking the bench's subject) or Mosquitto server in a process of
//! its own, as a receiver is, so the machine's CPU figure counts the broker's work as it
//! counts the receiver's.

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpStream,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// Where `api-ingest` sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum To {
    Http,
    Redis,
    Nats,
    Mqtt,
}

pub struct BrokerProcess {
    child: Child,
    port: u16,
    kind: To,
}

impl BrokerProcess {
    pub fn start(kind: To) -> BrokerProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let p = port.to_string();
        let dir = std::env::temp_dir().join(format!("ph-bench-nats-{}", std::process::id()));
        let mut command = match kind {
            To::Redis => {
                let mut c = Command::new("redis-server");
                c.args([
                    "--port",
                    &p,
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ]);
                c
            }
            To::Nats => {
                let mut c =
                    Command::new(if std::path::Path::new("/usr/sbin/nats-server").exists() {
                        "/usr/sbin/nats-server"
                    } else {
                        "nats-server"
                    });
                c.args(["-a", "127.0.0.1", "-p", &p, "-js", "-sd"])
                    .arg(&dir);
                c
            }
            To::Mqtt => {
                let conf =
                    std::env::temp_dir().join(format!("ph-bench-mqtt-{}.conf", std::process::id()));
                std::fs::write(
                    &conf,
                    format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest none\n"),
                )
                .unwrap();
                let mut c = Command::new(if std::path::Path::new("/usr/sbin/mosquitto").exists() {
                    "/usr/sbin/mosquitto"
                } else {
                    "mosquitto"
                });
                c.arg("-c").arg(conf);
                c
            }
            To::Http => unreachable!("HTTP goes to the receiver"),
        };
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server / nats-server on PATH");
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the broker did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        if kind == To::Nats {
            create_stream(port);
        }
        BrokerProcess { child, port, kind }
    }

    /// The endpoint's `destination`.
    pub fn destination(&self) -> serde_json::Value {
        match self.kind {
            To::Redis => {
                serde_json::json!({"type": "redis", "url": format!("redis://127.0.0.1:{}", self.port), "stream": "bench", "maxlen": 10_000_000})
            }
            To::Mqtt => {
                serde_json::json!({"type": "mqtt", "url": format!("mqtt://127.0.0.1:{}", self.port), "topic": "bench/events"})
            }
            _ => {
                serde_json::json!({"type": "nats", "url": format!("nats://127.0.0.1:{}", self.port), "subject": "bench.events"})
            }
        }
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stream `BENCH` on `bench.>`, made through JetStream's API by hand (a request and
/// its reply).
fn create_stream(port: u16) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap(); // INFO
    let config = r#"{"name":"BENCH","subjects":["bench.>"],"storage":"file","duplicate_window":120000000000}"#;
    write!(
        s,
        "CONNECT {{\"verbose\":false,\"headers\":true}}\r\nSUB _INBOX.bench 1\r\nPUB $JS.API.STREAM.CREATE.BENCH _INBOX.bench {}\r\n{config}\r\nPING\r\n",
        config.len()
    )
    .unwrap();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.starts_with("MSG") {
            line.clear();
            r.read_line(&mut line).unwrap();
            assert!(!line.contains("\"error\""), "stream: {line}");
            return;
        }
        assert!(!line.starts_with("-ERR"), "stream: {line}");
    }
}
