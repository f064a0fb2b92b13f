//! A real SMTP server for the alert tests: Python's aiosmtpd on loopback, storing every
//! message it accepts in a maildir and logging every recipient it was offered with its
//! answer. Its answers are scripted by the address's local part, like a mail host's:
//! `refuse-…` is refused for good (`550`), `busy-…` is told to come back (`451`) the
//! first two times it is offered and accepted after that; everyone else is accepted.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const SCRIPT: &str = r#"
import sys, threading
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox

port, maildir, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
offered = {}

class Scripted(Mailbox):
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        n = offered[address] = offered.get(address, 0) + 1
        local = address.split("@")[0]
        if local.startswith("refuse-"):
            answer = "550 5.1.1 <%s>: Recipient address rejected: User unknown" % address
        elif local.startswith("busy-") and n <= 2:
            answer = "451 4.3.0 <%s>: Mailbox busy, try again later" % address
        else:
            envelope.rcpt_tos.append(address)
            answer = "250 OK"
        with open(log, "a") as f:
            f.write("%s %s\n" % (address, answer[:3]))
        return answer

Controller(Scripted(maildir), hostname="127.0.0.1", port=port).start()
threading.Event().wait()
"#;

pub struct Smtp {
    pub url: String,
    maildir: PathBuf,
    log: PathBuf,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Smtp {
    pub async fn start() -> Smtp {
        let dir = tempfile::tempdir().unwrap();
        let maildir = dir.path().join("box");
        let log = dir.path().join("rcpt.log");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let python = std::env::var("POSTHORN_PYTHON").unwrap_or_else(|_| "python3".into());
        let child = Command::new(python)
            .args(["-c", SCRIPT, &port.to_string()])
            .arg(&maildir)
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python with aiosmtpd (set POSTHORN_PYTHON; end2end/requirements.txt)");
        let deadline = Instant::now() + Duration::from_secs(15);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "aiosmtpd did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Smtp {
            url: format!("smtp://127.0.0.1:{port}"),
            maildir,
            log,
            child,
            _dir: dir,
        }
    }

    /// The messages received so far, as text.
    pub fn messages(&self) -> Vec<String> {
        let mut out = Vec::new();
        for sub in ["new", "cur"] {
            let Ok(entries) = std::fs::read_dir(self.maildir.join(sub)) else {
                continue;
            };
            for e in entries.flatten() {
                out.push(std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
        out
    }

    /// The messages received so far for one address.
    pub fn messages_to(&self, address: &str) -> Vec<String> {
        let to = format!("To: {address}");
        self.messages()
            .into_iter()
            .filter(|m| m.lines().any(|l| l.eq_ignore_ascii_case(&to)))
            .collect()
    }

    /// How often the address was offered to the server, whatever it answered.
    pub fn offered(&self, address: &str) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.split(' ').next() == Some(address))
            .count()
    }
}

impl Drop for Smtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
