"""What another local user can do to deploy/local-cluster.sh's cluster: nothing.

The checks, each printed as `ok:` or `FAIL:` and asserted at the end:

- ports: `up` refuses to start while another user listens on one of its ports (here a
  fake PostgreSQL on HAProxy's, asking for passwords in clear text: it gets none);
- directories: `up` and `down` refuse a POSTHORN_CLUSTER_DIR owned by another user,
  one that group or others may write, a symbolic link, and one inside a folder others
  may write; they touch nothing in it (its files stay, a process named by its pid
  files stays alive);
- secrets: no password of the cluster is in any process's command line, sampled from
  before `up` until `down` (anyone may read /proc/*/cmdline);
- files: the cluster's folder and everything under it, logs included, are the user's
  alone (0700 folders, 0600 files), and another user cannot list it or read a log; as
  root, the nodes' own user runs nothing else (the machine's PostgreSQL runs as
  `postgres`, and whoever runs code as it could read what a node of that user reads);
- PostgreSQL: no connection over TCP without a password, as any of its users, through
  HAProxy or to any node (initdb's own pg_hba.conf trusts 127.0.0.1);
- Patroni: unauthenticated PATCH /config, POST /switchover and POST /restart are
  refused (401) while GET /cluster answers; with the credentials they are accepted;
- etcd: without the cluster's client certificate, a write, a read, raising an alarm
  and disabling authentication are refused, as is /metrics; with it but without a
  password, a read; with both, Patroni's user reads its keys; the peer ports talk only
  to a holder of the certificate;
- `down`: pid files planted in the folder (one in the format `up` writes, with the
  right start time) and a planted postmaster.pid, each naming a `sleep` of ours, do not
  get it killed; everything the cluster started is gone.

    .venv/bin/python deploy/test_cluster_security.py    (its own cluster, about a minute)

deploy/test_failover.py runs the same checks around its own cluster.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PSQL = os.environ.get("POSTHORN_PSQL", "psql")
SCRIPT = os.path.join(ROOT, "deploy", "local-cluster.sh")


# A PostgreSQL server of another user: asks every client for its password in clear text.
FAKE_POSTGRES = r"""
import socket, struct, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        data = c.recv(8192)
        while len(data) >= 8 and struct.unpack("!I", data[4:8])[0] in (80877103, 80877104):
            c.sendall(b"N")
            data = c.recv(8192)
        c.sendall(b"R" + struct.pack("!II", 8, 3))
        reply = c.recv(8192)
        if reply[:1] == b"p":
            print("password", reply[5:].rstrip(b"\0").decode(errors="replace"), flush=True)
    except Exception:
        pass
    finally:
        c.close()
"""


def log(msg: str) -> None:
    print(f"[security {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def start_time(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def request(method: str, url: str, body=None, auth=None, timeout: float = 5.0,
            context=None):
    """(status, text) of one HTTP call; status None when no HTTP answer came."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("content-type", "application/json")
    if auth:
        req.add_header("authorization", "Basic " + base64.b64encode(
            f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except Exception as e:  # noqa: BLE001 - refused, reset, TLS failure: no answer
        return None, repr(e)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Watcher(threading.Thread):
    """Every distinct command line seen in /proc while it runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: set = set()
        self.stopped = threading.Event()

    def run(self) -> None:
        me = str(os.getpid())
        while not self.stopped.is_set():
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or pid == me:
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        raw = f.read()
                except OSError:
                    continue
                if raw:
                    self.seen.add(raw.replace(b"\0", b" ").decode(errors="replace").strip())
            self.stopped.wait(0.1)

    def stop(self) -> None:
        self.stopped.set()
        self.join()


class Checks:
    def __init__(self, env: dict) -> None:
        self.env = dict(env)
        self.failures: list = []
        self.sleeps: list = []
        self.watcher = Watcher()
        self.root = os.geteuid() == 0
        self.cleanup: list = []

    def check(self, ok: bool, what: str, detail: str = "") -> None:
        if ok:
            log(f"ok: {what}")
        else:
            log(f"FAIL: {what}" + (f": {detail}" if detail else ""))
            self.failures.append(what)

    def sleep(self) -> int:
        proc = subprocess.Popen(["sleep", "900"], start_new_session=True)
        self.sleeps.append(proc)
        return proc.pid

    def script(self, action: str, cluster_dir: str, timeout: float = 120,
               binary: str = "/nonexistent") -> tuple:
        env = dict(self.env, POSTHORN_CLUSTER_DIR=cluster_dir, POSTHORN_BIN=binary)
        try:
            done = subprocess.run([SCRIPT, action], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=timeout)
            return done.returncode, done.stderr.strip()
        except subprocess.TimeoutExpired:
            return None, "timed out"

    # --- POSTHORN_CLUSTER_DIR that another user made or could change ------------------

    def directories(self) -> None:
        base = tempfile.mkdtemp(prefix="posthorn-security.", dir="/var/tmp")
        self.cleanup.append(base)
        cases = []

        def planted_dir(path: str) -> dict:
            os.makedirs(os.path.join(path, "pids"))
            pid = self.sleep()
            with open(os.path.join(path, "pids", "serve0"), "w") as f:
                f.write(f"{pid}\n")
            with open(os.path.join(path, "keep"), "w") as f:
                f.write("not the script's to remove\n")
            return {"path": path, "pid": pid}

        if self.root:
            case = planted_dir(os.path.join(base, "foreign"))
            nobody = int(subprocess.run(["id", "-u", "nobody"], stdout=subprocess.PIPE,
                                        text=True, check=True).stdout)
            for dirpath, dirnames, filenames in os.walk(case["path"]):
                for name in [dirpath] + [os.path.join(dirpath, n) for n in filenames]:
                    os.lchown(name, nobody, -1)
            os.chmod(case["path"], 0o700)
            case["what"] = "a folder owned by another user (nobody)"
            cases.append(case)
        else:
            log("not root: the folder of another user is not made (cannot chown)")
        case = planted_dir(os.path.join(base, "open"))
        os.chmod(case["path"], 0o777)
        case["what"] = "a folder others may write (0777)"
        cases.append(case)
        case = planted_dir(os.path.join(base, "target"))
        os.chmod(case["path"], 0o700)
        os.symlink(case["path"], os.path.join(base, "link"))
        case["path"] = os.path.join(base, "link")
        case["what"] = "a symbolic link to a folder of ours"
        cases.append(case)
        os.makedirs(os.path.join(base, "shared"))
        os.chmod(os.path.join(base, "shared"), 0o777)
        case = planted_dir(os.path.join(base, "shared", "cluster"))
        os.chmod(case["path"], 0o700)
        case["what"] = "a folder inside one others may write (0777, not sticky)"
        cases.append(case)

        self.taken_port(base)
        for case in cases:
            for action in ("down", "up"):
                rc, err = self.script(action, case["path"])
                kept = os.path.exists(os.path.join(case["path"], "keep"))
                self.check(rc not in (0, None) and "refus" in err and kept and alive(case["pid"]),
                           f"`{action}` refuses {case['what']}",
                           f"exit {rc}, said {err.splitlines()[-1] if err else ''!r}, "
                           f"its file {'kept' if kept else 'removed'}, the process named by "
                           f"its pid file {'alive' if alive(case['pid']) else 'KILLED'}")

    def taken_port(self, base: str) -> None:
        """Another user listening first on the port the superuser connects to through
        HAProxy, asking for the password in clear text: `up` must refuse, and send it
        nothing."""
        if not self.root:
            log("not root: no other user to take a port")
            return
        port = int(self.env.get("POSTHORN_CLUSTER_PORT", "7400")) + 10
        subprocess.run([SCRIPT, "down"], env=self.env, stderr=subprocess.DEVNULL)  # an earlier one
        fake = subprocess.Popen(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
             sys.executable, "-c", FAKE_POSTGRES, str(port)],
            stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert fake.stdout.readline().strip() == "listening", "the fake server started"
            path = tempfile.mkdtemp(prefix="posthorn-port-check.", dir="/var/tmp")
            self.cleanup.append(path)
            rc, err = self.script("up", path, timeout=300, binary=self.env.get(
                "POSTHORN_BIN") or os.path.join(self.env.get(
                    "CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "debug", "posthorn"))
            self.script("down", path)
        finally:
            os.killpg(fake.pid, signal.SIGKILL)
            fake.wait()
        got = [line.strip() for line in fake.stdout if line.startswith("password")]
        self.check(rc not in (0, None) and f"port {port} is taken" in err and not got,
                   f"`up` refuses to start while another user listens on port {port}, "
                   "and sends it no password",
                   f"exit {rc}, said {err.splitlines()[-1] if err else ''!r}, "
                   f"the other user got {len(got)} passwords in clear text")

    # --- while the cluster runs ------------------------------------------------------

    def secrets(self, cluster: dict, workdir: str) -> dict:
        found: dict = {}
        m = re.match(r"postgres(?:ql)?://[^:]+:([^@]+)@", cluster["database_url"])
        if m:
            found["database_url"] = m.group(1)
        for node in cluster["nodes"]:
            path = os.path.join(os.path.dirname(node["data_dir"]), "patroni.yml")
            try:
                with open(path) as f:
                    for i, value in enumerate(re.findall(r"password:\s*['\"]?([^'\"\s]+)", f.read())):
                        found[f"{node['name']} patroni.yml #{i}"] = value
            except OSError as e:
                log(f"cannot read {path}: {e}")
        self.env_file = {}
        try:
            with open(os.path.join(workdir, "secrets.env")) as f:
                for line in f:
                    if "=" in line and not line.startswith("#"):
                        name, value = line.strip().split("=", 1)
                        self.env_file[name] = value.strip("'\"")
        except OSError:
            pass
        found.update((k, v) for k, v in self.env_file.items() if "PASSWORD" in k)
        return {k: v for k, v in found.items() if len(v) >= 8}

    def running(self, cluster: dict, workdir: str) -> None:
        secrets = self.secrets(cluster, workdir)
        env_file = self.env_file
        log(f"{len(secrets)} secrets of the cluster to look for; "
            f"{len(self.watcher.seen)} command lines seen so far")

        # Files and folders: the user's alone.
        st = os.lstat(workdir)
        import pwd
        nodes_uid = os.lstat(os.path.join(workdir, cluster["nodes"][0]["name"])).st_uid
        nodes_gid = pwd.getpwuid(nodes_uid).pw_gid
        top_ok = st.st_uid == os.geteuid() and (
            st.st_mode & 0o077 == 0 or (nodes_uid != st.st_uid and st.st_mode & 0o077 == 0o010
                                        and st.st_gid == nodes_gid))
        self.check(top_ok, "the cluster folder is the user's alone (0700; 0710 for the "
                   "nodes' group when they run as another user)",
                   f"{workdir}: mode {oct(st.st_mode & 0o7777)}, uid {st.st_uid}, gid {st.st_gid}")
        if self.root:
            # Whatever else runs as the nodes' user could read their passwords.
            others = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    if os.stat(f"/proc/{pid}").st_uid != nodes_uid:
                        continue
                    chain, p = [], pid
                    while p not in ("0", "1"):
                        with open(f"/proc/{p}/cmdline", "rb") as f:
                            chain.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
                        with open(f"/proc/{p}/stat") as f:
                            p = f.read().rsplit(")", 1)[1].split()[1]
                except OSError:
                    continue
                if not any(workdir in line for line in chain):
                    others.append(f"{pid}: {chain[0][:80]}")
            self.check(not others, f"the nodes' user ({pwd.getpwuid(nodes_uid).pw_name}) runs "
                       "nothing but the cluster", f"{len(others)} other processes, e.g. {others[:3]}")
        loose = []
        for dirpath, dirnames, filenames in os.walk(workdir):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                s = os.lstat(path)
                if (s.st_mode & 0o170000) == 0o120000:  # a symbolic link's mode means nothing
                    continue
                if s.st_mode & 0o077:
                    loose.append(f"{os.path.relpath(path, workdir)} {oct(s.st_mode & 0o7777)}")
        self.check(not loose, "nothing under it may be read by group or others",
                   f"{len(loose)} entries, e.g. {loose[:6]}")
        logs = os.path.join(workdir, "logs")
        modes = {n: oct(os.lstat(os.path.join(logs, n)).st_mode & 0o777) for n in os.listdir(logs)}
        self.check(oct(os.lstat(logs).st_mode & 0o777) == "0o700"
                   and all(m == "0o600" for m in modes.values()),
                   "logs/ is 0700 and every log 0600",
                   f"logs/ {oct(os.lstat(logs).st_mode & 0o777)}, {modes}")
        if self.root:
            as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
            listed = subprocess.run(as_nobody + ["ls", workdir], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL).returncode == 0
            log_file = os.path.join(logs, sorted(modes)[0])
            read = subprocess.run(as_nobody + ["cat", log_file], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode == 0
            self.check(not listed and not read, "another user (nobody) can neither list the "
                       "folder nor read a log", f"listed: {listed}, read {log_file}: {read}")

        # PostgreSQL: nothing over TCP without a password (initdb's pg_hba.conf trusts
        # every connection from 127.0.0.1), through HAProxy or to any node.
        base = int(self.env.get("POSTHORN_CLUSTER_PORT", "7400"))
        as_other = (["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
                    if self.root else [])
        for port in [base + 10] + [base + 11 + i for i in range(3)]:
            for user, database in (("postgres", "postgres"), ("replicator", "postgres"),
                                   ("rewinder", "postgres"), ("postgres", "replication")):
                args = ["-h", "127.0.0.1", "-p", str(port), "-U", user, "-w"]
                if database == "replication":
                    args[0:0] = ["-d", "replication=true"]
                    query = "IDENTIFY_SYSTEM"
                else:
                    args += ["-d", database]
                    query = "SELECT current_user"
                done = subprocess.run(as_other + [PSQL] + args + ["-tAc", query],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=dict(PATH=os.environ.get("PATH", ""), PGPASSFILE="/dev/null",
                                               PGCONNECT_TIMEOUT="5"))
                self.check(done.returncode != 0,
                           f"PostgreSQL :{port}: {user} ({database}) without a password is refused",
                           f"connected: {done.stdout.strip()[:80]!r}")

        # Patroni's REST API: reads open, changes authenticated.
        rest_user = env_file.get("PATRONI_REST_USERNAME", "")
        rest_auth = (rest_user, env_file.get("PATRONI_REST_PASSWORD", ""))
        for node in cluster["nodes"]:
            url = node["patroni"]
            status, _ = request("GET", url + "/cluster")
            self.check(status == 200, f"{node['name']}: GET /cluster answers without credentials",
                       f"status {status}")
            for method, path, body in (("PATCH", "/config", {"loop_wait": 2}),
                                       ("POST", "/switchover", {"leader": "nobody-such"}),
                                       ("POST", "/restart", {"schedule": "2999-01-01T00:00:00+00:00"})):
                status, text = request(method, url + path, body)
                self.check(status == 401, f"{node['name']}: {method} {path} without credentials "
                           "is refused (401)", f"status {status}: {text[:120]!r}")
                status, text = request(method, url + path, body, auth=("patroni", "guessed"))
                self.check(status == 401, f"{node['name']}: {method} {path} with a wrong "
                           "password is refused (401)", f"status {status}: {text[:120]!r}")
            if rest_user:
                status, text = request("PATCH", url + "/config", {"loop_wait": 2}, auth=rest_auth)
                self.check(status == 200, f"{node['name']}: PATCH /config with the cluster's "
                           "credentials is accepted", f"status {status}: {text[:120]!r}")

        # etcd: nothing without the cluster's client certificate, then nothing without a
        # password. (Without the certificate, etcd 3.4 lets anyone raise a NOSPACE alarm,
        # after which it checks no user at all: auth/disable then succeeds.)
        base = int(self.env.get("POSTHORN_CLUSTER_PORT", "7400"))
        tls = os.path.join(workdir, "tls")
        no_verify = ssl.create_default_context()
        no_verify.check_hostname = False
        no_verify.verify_mode = ssl.CERT_NONE
        for i in range(3):
            port = base + 41 + i
            for scheme in ("http", "https"):
                url = f"{scheme}://127.0.0.1:{port}/v3"
                for what, path, body in (
                        ("write", "/kv/put", {"key": b64("/posthorn-security-probe"), "value": b64("x")}),
                        ("read", "/kv/range", {"key": b64("/service/"), "range_end": b64("/service0")}),
                        ("alarm", "/maintenance/alarm",
                         {"action": "ACTIVATE", "memberID": "0", "alarm": "NOSPACE"}),
                        ("auth/disable", "/auth/disable", {})):
                    status, text = request("POST", url + path, body, context=no_verify)
                    if what == "alarm" and status == 200:
                        request("POST", url + path, dict(body, action="DEACTIVATE"), context=no_verify)
                    self.check(status != 200, f"etcd {scheme} :{port}: an unauthenticated {what} is "
                               "refused", f"status {status}: {text[:160]!r}")
            status, text = request("GET", f"https://127.0.0.1:{port}/metrics", context=no_verify)
            self.check(status != 200, f"etcd :{port}: /metrics needs the cluster's certificate",
                       f"status {status}")
        if env_file.get("ETCD_PATRONI_PASSWORD"):
            context = ssl.create_default_context(cafile=os.path.join(tls, "ca.crt"))
            context.load_cert_chain(os.path.join(tls, "client.crt"), os.path.join(tls, "client.key"))
            url = f"https://127.0.0.1:{base + 41}/v3"
            status, text = request("POST", url + "/kv/range", {"key": b64("/service/posthorn/leader")},
                                   context=context)
            self.check(status != 200, "etcd: with the certificate but no password, a read is "
                       "refused", f"status {status}: {text[:160]!r}")
            status, text = request("POST", url + "/auth/authenticate",
                                   {"name": "patroni", "password": env_file["ETCD_PATRONI_PASSWORD"]},
                                   context=context)
            token = json.loads(text).get("token") if status == 200 else None
            count = None
            if token:
                req = urllib.request.Request(url + "/kv/range", method="POST", data=json.dumps(
                    {"key": b64("/service/posthorn/leader")}).encode(),
                    headers={"authorization": token})
                with urllib.request.urlopen(req, timeout=5, context=context) as r:
                    count = json.load(r).get("count")
            self.check(count == "1", "etcd: Patroni's user, with the certificate, reads the "
                       "leader key", f"authenticate: {status}, count {count}")
        for i in range(3):
            peer = base + 51 + i
            status, text = request("GET", f"http://127.0.0.1:{peer}/members")
            status_tls, text_tls = request("GET", f"https://127.0.0.1:{peer}/members",
                                           context=no_verify)
            self.check(status != 200 and status_tls != 200,
                       f"etcd peer port {peer}: nothing without the cluster's certificate",
                       f"http: {status} {text[:80]!r}; https without a certificate: "
                       f"{status_tls} {text_tls[:80]!r}")

        self.secrets_found = secrets

    def no_secret_in_argv(self) -> None:
        self.watcher.stop()
        leaks = []
        for line in self.watcher.seen:
            for name, value in self.secrets_found.items():
                if value in line:
                    leaks.append(f"{name} in: {line.replace(value, '<' + name + '>')[:200]}")
        self.check(not leaks, f"no password of the cluster in any of the "
                   f"{len(self.watcher.seen)} command lines seen while it ran",
                   f"{len(leaks)} leaks, e.g. {leaks[:4]}")

    # --- `down` and planted pid files ------------------------------------------------

    def plant(self, workdir: str) -> dict:
        planted = {}
        pid = self.sleep()
        with open(os.path.join(workdir, "pids", "serve9"), "w") as f:
            f.write(f"{pid}\n")
        planted["a pid file naming it"] = pid
        pid = self.sleep()
        with open(os.path.join(workdir, "pids", "etcd9"), "w") as f:
            f.write(f"{pid} {start_time(pid)}\n")
        planted["a pid file naming it with its start time"] = pid
        pid = self.sleep()
        os.makedirs(os.path.join(workdir, "pg9", "data"))
        with open(os.path.join(workdir, "pg9", "data", "postmaster.pid"), "w") as f:
            f.write(f"{pid}\n{os.path.join(workdir, 'pg9', 'data')}\n")
        planted["a postmaster.pid naming it"] = pid
        return planted

    def after_down(self, planted: dict, cluster: dict, workdir: str) -> None:
        for what, pid in planted.items():
            self.check(alive(pid), f"`down` leaves a process of someone else's alive: {what}",
                       f"pid {pid} was killed")
        left = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    line = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if workdir in line and alive(int(pid)):
                left.append(f"{pid}: {line[:120]}")
        for pid in [cluster["dispatcher_pid"]] + [s["pid"] for s in cluster["servers"]]:
            if alive(pid):
                left.append(f"{pid}: a posthorn process")
        self.check(not left, "`down` stopped everything the cluster ran", f"{left[:5]}")

    def finish(self, completed: bool = True) -> None:
        if self.watcher.is_alive():
            self.watcher.stop()
        for proc in self.sleeps:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for path in self.cleanup:
            shutil.rmtree(path, ignore_errors=True)
        assert not self.failures, f"{len(self.failures)} security checks failed: {self.failures}"
        if completed:
            log("every check passed")


def cluster_dir(cluster: dict, env: dict) -> str:
    return cluster.get("dir") or env.get("POSTHORN_CLUSTER_DIR", "/var/tmp/posthorn-cluster")


def main() -> None:
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    checks = Checks(env)
    down_done = completed = False
    try:
        checks.directories()
        checks.watcher.start()
        log("deploy/local-cluster.sh up")
        out = subprocess.run([SCRIPT, "up"], env=env, stdout=subprocess.PIPE, check=True,
                             text=True).stdout
        cluster = json.loads(out.strip().splitlines()[-1])
        workdir = cluster_dir(cluster, env)
        checks.running(cluster, workdir)
        checks.no_secret_in_argv()
        planted = checks.plant(workdir)
        subprocess.run([SCRIPT, "down"], env=env)
        down_done = True
        checks.after_down(planted, cluster, workdir)
        completed = True
    finally:
        if not down_done:
            subprocess.run([SCRIPT, "down"], env=env)
        checks.finish(completed)


if __name__ == "__main__":
    main()
