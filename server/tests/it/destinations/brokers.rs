//! Private Redis and NATS servers for the destination tests, each on a port of its own
//! (so a test may stop and start one without touching anyone else's), and the Python
//! consumer that reads what was published and verifies it with the SDK.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_listening(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn binary(name: &str) -> String {
    for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin"] {
        let p = format!("{dir}/{name}");
        if std::path::Path::new(&p).exists() {
            return p;
        }
    }
    name.to_string()
}

/// A broker process on `port`, stopped when dropped.
pub struct Broker {
    pub port: u16,
    child: Option<Child>,
    start: Box<dyn Fn(u16) -> Child + Send + Sync>,
    what: &'static str,
}

impl Broker {
    pub fn redis(password: Option<&str>) -> Broker {
        let password = password.map(str::to_string);
        Self::on(free_port(), "redis-server", move |port| {
            let mut c = Command::new(binary("redis-server"));
            c.args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no", "--dir", "/tmp", "--logfile", ""]);
            if let Some(p) = &password {
                c.args(["--requirepass", p]);
            }
            c
        })
    }

    /// NATS with JetStream, its store in a directory of its own (kept across a restart).
    pub fn nats() -> Broker {
        let dir: PathBuf = std::env::temp_dir().join(format!("ph-nats-{}", ulid::Ulid::new()));
        Self::on(free_port(), "nats-server", move |port| {
            let mut c = Command::new(binary("nats-server"));
            c.args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
                .arg(&dir);
            c
        })
    }

    /// Mosquitto (MQTT 5), with a user and password when given (then nobody else).
    pub fn mosquitto(login: Option<(&str, &str)>) -> Broker {
        let dir = std::env::temp_dir().join(format!("ph-mqtt-{}", ulid::Ulid::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let port = free_port();
        let mut conf = format!("listener {port} 127.0.0.1\npersistence false\nlog_dest none\n");
        match login {
            Some((user, password)) => {
                let file = dir.join("passwd");
                let made = Command::new(binary("mosquitto_passwd"))
                    .args(["-b", "-c"])
                    .arg(&file)
                    .args([user, password])
                    .output()
                    .expect("mosquitto_passwd");
                assert!(made.status.success(), "{made:?}");
                conf += &format!("allow_anonymous false\npassword_file {}\n", file.display());
            }
            None => conf += "allow_anonymous true\n",
        }
        let conf_file = dir.join("mosquitto.conf");
        std::fs::write(&conf_file, conf).unwrap();
        Self::on(port, "mosquitto", move |_| {
            let mut c = Command::new(binary("mosquitto"));
            c.arg("-c").arg(&conf_file);
            c
        })
    }

    /// A RabbitMQ node of its own (its own name, ports and store, no plugins), with the
    /// `guest` user the broker makes at first boot (loopback only). Takes seconds to boot.
    pub fn rabbitmq() -> Broker {
        let id = ulid::Ulid::new().to_string().to_lowercase();
        let dir = std::env::temp_dir().join(format!("ph-rabbitmq-{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("enabled_plugins"), "[].\n").unwrap();
        let dist = free_port().to_string();
        Self::on(free_port(), "rabbitmq-server", move |port| {
            let mut c = Command::new("/usr/lib/rabbitmq/bin/rabbitmq-server");
            c.env("RABBITMQ_NODENAME", format!("ph-{id}@localhost"))
                .env("RABBITMQ_NODE_PORT", port.to_string())
                .env("RABBITMQ_DIST_PORT", &dist)
                .env("RABBITMQ_MNESIA_BASE", dir.join("mnesia"))
                .env("RABBITMQ_LOG_BASE", dir.join("log"))
                .env("RABBITMQ_ENABLED_PLUGINS_FILE", dir.join("enabled_plugins"))
                .env("RABBITMQ_CONFIG_FILE", dir.join("none"));
            c
        })
    }

    fn on(
        port: u16,
        what: &'static str,
        command: impl Fn(u16) -> Command + Send + Sync + 'static,
    ) -> Broker {
        let start = move |port: u16| {
            use std::os::unix::process::CommandExt;
            command(port)
                .process_group(0)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{what}: {e} (installed by .ci/dev.sh tools)"))
        };
        let mut b = Broker {
            port,
            child: None,
            start: Box::new(start),
            what,
        };
        b.start();
        b
    }

    pub fn start(&mut self) {
        self.child = Some((self.start)(self.port));
        wait_listening(self.port, self.what);
    }

    /// Stops the broker and every process it started (RabbitMQ's script starts Erlang).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", c.id())])
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
        // Until the port is free again, so that a start binds it anew.
        let deadline = Instant::now() + Duration::from_secs(15);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A consumer that subscribes before anything is published (MQTT keeps nothing for a
/// subscriber that was not there): started, then waited for.
pub struct Subscription {
    child: Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Subscription {
    /// Starts `consume.py` with `args` and returns once it says it has subscribed.
    pub fn start(args: &[&str]) -> Subscription {
        use std::io::BufRead;
        let mut child = consumer(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        assert!(
            first.contains("ready"),
            "the consumer did not subscribe: {first}"
        );
        Subscription { child, lines }
    }

    /// What it read and verified, once it has its messages (or gave up waiting).
    pub async fn finish(self) -> Vec<Value> {
        let Subscription { mut child, lines } = self;
        tokio::task::spawn_blocking(move || {
            let got: Vec<Value> = lines
                .map_while(Result::ok)
                .filter_map(|l| serde_json::from_str(&l).ok())
                .collect();
            let status = child.wait().unwrap();
            assert!(status.success(), "the consumer failed: {status}");
            got
        })
        .await
        .unwrap()
    }
}

fn consumer(args: &[&str]) -> Command {
    let python = std::env::var("POSTHORN_PYTHON").unwrap_or_else(|_| "python3".into());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut c = Command::new(python);
    c.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/it/destinations/consume.py"
    ))
    .args(args)
    .env("PYTHONPATH", format!("{root}/sdk/python/src"));
    c
}

/// Runs the consumer (`consume.py`) and returns what it printed, one JSON value a line.
pub async fn consume(args: &[&str]) -> Vec<Value> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || consume_now(&args))
        .await
        .unwrap()
}

fn consume_now(args: &[String]) -> Vec<Value> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = consumer(&args)
        .output()
        .expect("python with redis and nats-py (set POSTHORN_PYTHON)");
    assert!(
        out.status.success(),
        "consumer {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
