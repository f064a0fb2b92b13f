"""The demo overlay played with `podman kube play --network host` (deploy/test_kube.py).

Debian's podman 4.3 plays Pods, Deployments (one replica), ConfigMaps and
PersistentVolumeClaims, on this machine's network; it has no Services, Jobs, readiness
gates or controller. So, from the rendered demo:
- every name gets a prefix and the ports are moved to free ones (other work on this
  machine may hold 3000 or 55432);
- the Secrets become podman secrets (kube play reads Secret references from them);
- the migration Job is played as a Pod first, and waited for;
- the second server is the server Deployment again under another name and port (what a
  second replica is on one host); this test balances between the two as a Service would;
- ports and probes are left out (podman maps no port on the host's network and runs an
  HTTP probe as curl inside the container); readiness is polled by this test (/readyz);
  a kill is SIGKILL of a pod's process,
  after which its restartPolicy (Always) brings it back (`podman kill` counts as a stop
  asked for, which podman never restarts); an upgrade is `kube play --replace` of one
  Deployment at a time with a new image.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import yaml

from kube_traffic import Receiver, Sender, http_json, sign_in

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = "phkt-"
IMAGE = "localhost/posthorn:kube-test"
NEXT_IMAGE = "localhost/posthorn:kube-next"
RATE = float(os.environ.get("POSTHORN_KUBE_RATE", "100"))
READY_TIMEOUT = 120.0
DRAIN_TIMEOUT = 120.0
# A delivery whose outcome died with its dispatcher is sent again after the lease; its
# first copy left at most this long before the kill or the stop.
LEASE = "10s"
DUPLICATE_WINDOW = 5.0


def log(msg: str) -> None:
    print(f"[kube-play {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Podman:
    """podman as it runs here: runc, cgroupfs, no default ulimits (TOOLCHAIN.md)."""

    def __init__(self, work: str) -> None:
        conf = os.path.join(work, "containers.conf")
        with open(conf, "w") as f:
            f.write("[containers]\ndefault_ulimits = []\n")
        self.env = dict(os.environ, CONTAINERS_CONF=conf)

    def __call__(self, *args: str, check: bool = True, stdin: str | None = None) -> str:
        cmd = ["podman", "--runtime=runc", "--cgroup-manager=cgroupfs", *args]
        done = subprocess.run(cmd, env=self.env, input=stdin, capture_output=True, text=True)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")
        return done.stdout.strip()

    def play(self, path: str, replace: bool = False) -> None:
        self("kube", "play", "--network", "host", *(["--replace"] if replace else []), path)

    def pid(self, container: str) -> int:
        return int(self("inspect", container, "--format", "{{.State.Pid}}"))

    def restarts(self, container: str) -> int:
        return int(self("inspect", container, "--format", "{{.RestartCount}}"))


def renamed(doc: dict) -> dict:
    """The document with the test's prefix on its name and on every name it refers to."""
    doc = copy.deepcopy(doc)
    doc["metadata"]["name"] = PREFIX + doc["metadata"]["name"]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("configMapRef", "secretRef", "secretKeyRef", "configMap"):
                    value["name"] = PREFIX + value["name"]
                elif key == "persistentVolumeClaim":
                    value["claimName"] = PREFIX + value["claimName"]
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(doc.get("spec", {}))
    return doc


class Demo:
    """The rendered demo, adapted to podman and this machine's free ports."""

    def __init__(self, docs: list[dict], work: str) -> None:
        self.work = work
        self.pg_port, self.ports = free_port(), [free_port(), free_port()]
        by_kind = {}
        for d in docs:
            by_kind.setdefault(d["kind"], []).append(d)
        self.config = renamed(by_kind["ConfigMap"][0])
        self.config["data"].update({
            "LEPTOS_SITE_ADDR": f"127.0.0.1:{self.ports[0]}",
            "POSTHORN_PUBLIC_URL": f"http://127.0.0.1:{self.ports[0]}",
            # The test's 100 events/s through one key, retries that come quickly, and
            # a lease short enough to see a killed dispatcher's attempts sent again.
            "POSTHORN_PLAN_LIMITS": "trial=1000000,business=1000000",
            "POSTHORN_RETRY_SCHEDULE": "1s,2s,4s,8s,15s",
            "POSTHORN_LEASE": LEASE,
        })
        self.secrets = [renamed(s) for s in by_kind["Secret"]]
        self.workloads = {d["metadata"]["name"]: d for d in by_kind["Deployment"] + by_kind["Job"]}
        self.claims = [renamed(d) for d in by_kind["PersistentVolumeClaim"]]
        self.database_url = ""
        self._move_database()
        self.secret_env = {k: base64.b64decode(v).decode() for s in self.secrets
                           if "DATABASE_URL" in s.get("data", {}) for k, v in s["data"].items()}

    def _move_database(self) -> None:
        for s in self.secrets:
            data = s.get("data", {})
            if "DATABASE_URL" in data:
                url = base64.b64decode(data["DATABASE_URL"]).decode()
                url = url.replace(":55432/", f":{self.pg_port}/")
                data["DATABASE_URL"] = base64.b64encode(url.encode()).decode()
                self.database_url = url
        pg = self.workloads["posthorn-postgres"]["spec"]["template"]["spec"]["containers"][0]
        for e in pg["env"]:
            if e["name"] == "PGPORT":
                e["value"] = str(self.pg_port)

    def container_name(self, name: str) -> str:
        """The podman container of a played Deployment's (or Pod's) first container."""
        doc = self.workloads.get(name) or self.workloads["posthorn-server"]
        inner = doc["spec"]["template"]["spec"]["containers"][0]["name"]
        pod = PREFIX + name + ("" if name == "posthorn-migrate" else "-pod-0")
        return f"{pod}-{inner}"

    def write(self, name: str, image: str = IMAGE) -> str:
        """One playable file: the ConfigMap, and the workload (with its claims)."""
        docs = [self.config]
        doc = copy.deepcopy(self.workloads.get(name) or self.workloads["posthorn-server"])
        if name == "posthorn-server-2":
            # Its own ConfigMap for its own port (podman lets envFrom win over env).
            doc["metadata"]["name"] = name
            config = copy.deepcopy(self.config)
            config["metadata"]["name"] += "-2"
            config["data"]["LEPTOS_SITE_ADDR"] = f"127.0.0.1:{self.ports[1]}"
            docs = [config]
            for ref in doc["spec"]["template"]["spec"]["containers"][0]["envFrom"]:
                if "configMapRef" in ref:
                    ref["configMapRef"]["name"] += "-2"
        if doc["kind"] == "Job":
            spec = doc["spec"]["template"]["spec"]
            spec["restartPolicy"] = "Never"
            doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name,
                   "labels": doc["spec"]["template"]["metadata"]["labels"]}, "spec": spec}
        elif name == "posthorn-postgres":
            docs += self.claims
        spec = doc["spec"] if doc["kind"] == "Pod" else doc["spec"]["template"]["spec"]
        for c in spec["containers"]:
            if c["image"].startswith("localhost/posthorn:"):
                c["image"] = image
            # podman refuses port mappings on the host's network, and would run an HTTP
            # probe as curl inside the container (there is none): this test polls instead.
            for key in ("ports", "readinessProbe", "livenessProbe"):
                c.pop(key, None)
        path = os.path.join(self.work, f"{name}.yaml")
        with open(path, "w") as f:
            yaml.safe_dump_all(docs + [renamed(doc)], f)
        return path

    def base_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.ports[i]}"


def wait_for(what: str, check, timeout: float = READY_TIMEOUT) -> float:
    started = time.time()
    while True:
        try:
            if check():
                return time.time() - started
        except (OSError, urllib.error.URLError, ValueError, RuntimeError):
            pass
        if time.time() - started > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.25)


def ready(base: str) -> bool:
    with urllib.request.urlopen(base + "/readyz", timeout=3) as r:
        return r.status == 200


def port_open(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


def build_images(podman: Podman) -> None:
    """The test's image from this run's build, and a second one (another label) to
    upgrade to; the demo's PostgreSQL."""
    script = os.path.join(ROOT, "deploy", "image", "build.sh")
    binary, site = os.environ["POSTHORN_BIN"], os.environ["LEPTOS_SITE_ROOT"]
    started = time.time()
    subprocess.run([script, "posthorn", binary, site, IMAGE], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([script, "posthorn", binary, site, NEXT_IMAGE], check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, POSTHORN_IMAGE_LABEL="next"))
    subprocess.run([script, "postgres", "localhost/posthorn-postgres:15"], check=True,
                   stdout=subprocess.DEVNULL)
    size = podman("image", "inspect", IMAGE, "--format", "{{.Size}}")
    log(f"images built in {time.time() - started:.1f} s ({IMAGE}: {int(size) / 2**20:.1f} MiB)")


def clean(podman: Podman, demo: Demo) -> None:
    for pod in podman("pod", "ls", "--format", "{{.Name}}").split():
        if pod.startswith(PREFIX):
            podman("pod", "rm", "-f", "-t", "0", pod, check=False)
    for s in demo.secrets:
        podman("secret", "rm", s["metadata"]["name"], check=False)
    for c in demo.claims:
        podman("volume", "rm", "-f", c["metadata"]["name"], check=False)


def start(podman: Podman, demo: Demo) -> dict:
    times = {}
    for s in demo.secrets:
        podman("secret", "create", s["metadata"]["name"], "-", stdin=json.dumps(s.get("data", {})))
    t0 = time.time()
    podman.play(demo.write("posthorn-postgres"))
    times["postgres"] = wait_for("PostgreSQL", lambda: port_open(demo.pg_port))
    podman.play(demo.write("posthorn-migrate"))
    code = podman("wait", demo.container_name("posthorn-migrate"))
    assert code == "0", f"the migration Job's pod exited {code}: " + \
        podman("logs", demo.container_name("posthorn-migrate"), check=False)
    times["migrate+seed"] = time.time() - t0 - times["postgres"]
    for name in ("posthorn-server", "posthorn-server-2", "posthorn-dispatcher"):
        podman.play(demo.write(name))
    t1 = time.time()
    for i in (0, 1):
        times[f"server-{i + 1}"] = wait_for(f"server {i + 1}", lambda i=i: ready(demo.base_url(i)))
    times["dispatcher"] = wait_for("dispatcher", lambda: podman(
        "inspect", demo.container_name("posthorn-dispatcher"), "--format", "{{.State.Running}}") == "true")
    log("ready (s): " + json.dumps({k: round(v, 1) for k, v in times.items()}) +
        f", servers and dispatcher {time.time() - t1:.1f} s after their play")
    return times


def kill(podman: Podman, demo: Demo, name: str, base: str | None) -> float:
    """SIGKILL of the pod's process; returns how long until it is back (ready)."""
    container = demo.container_name(name)
    before = podman.restarts(container)
    os.kill(podman.pid(container), signal.SIGKILL)
    took = wait_for(f"{name} restarted", lambda: podman.restarts(container) > before)
    if base:
        took = wait_for(f"{name} ready again", lambda: ready(base)) + took
    log(f"killed {name}: back in {took:.1f} s (restarts {before} → {podman.restarts(container)})")
    return took


def project(podman: Podman, demo: Demo) -> str:
    """An operator command through the image: create-project prints the API key. The
    Secret's values go in an env file (a command line is readable by every local user)."""
    env_file = os.path.join(demo.work, "secrets.env")
    with open(os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.writelines(f"{k}={v}\n" for k, v in demo.secret_env.items() if v)
    out = podman("run", "--rm", "--network=host", "--read-only", "--ulimit", "host",
                 "--env-file", env_file, IMAGE, "create-project",
                 "--name", "kube", "--owner-email", "kube@example.com",
                 "--owner-password", "kube-password-1", "--plan", "business")
    return json.loads(out.splitlines()[-1])["api_key"]


def readiness_follows_the_database(podman: Podman, demo: Demo) -> None:
    podman("pod", "stop", "-t", "5", PREFIX + "posthorn-postgres-pod-0")
    took = wait_for("/readyz refusing", lambda: not ready_or_false(demo.base_url(0)), 30)
    with urllib.request.urlopen(demo.base_url(0) + "/livez", timeout=3) as r:
        assert r.status == 200, "alive without its database"
    log(f"database stopped: /readyz 503 after {took:.1f} s, /livez 200")


def ready_or_false(base: str) -> bool:
    try:
        return ready(base)
    except urllib.error.HTTPError:
        return False


def scenario(podman: Podman, demo: Demo, receiver: Receiver) -> dict:
    key = project(podman, demo)
    bases = [demo.base_url(0), demo.base_url(1)]
    http_json(bases[0] + "/public/v1/webhooks", key, {"url": receiver.url, "events": ["*"]})
    first = http_json(bases[1] + "/public/v1/events", key, {"event": "kube.hello", "data": {}})
    wait_for("the first event at the receiver", lambda: first["id"] in receiver.seen(), 30)
    log(f"an event sent through the API reached the receiver ({first['id']})")
    sign_in(bases[0], "owner@example.com", "demo-password")
    log("the dashboard signed in as the demo's owner; its deliveries page lists rows")
    sender = Sender(bases, key, RATE)
    sender.start()
    phases = [("kills", time.time())]
    stops: list[float] = []
    time.sleep(5)
    kill(podman, demo, "posthorn-server", bases[0])
    stops.append(time.time())
    kill(podman, demo, "posthorn-dispatcher", None)
    time.sleep(5)
    phases.append(("upgrade", time.time()))
    rolling_upgrade(podman, demo, bases, stops)
    time.sleep(3)
    sender.stop()
    return counts(sender, receiver, stops, phases)


def rolling_upgrade(podman: Podman, demo: Demo, bases: list[str], stops: list[float]) -> None:
    """Servers one at a time, then the migration Job, then the dispatcher."""
    took = {}
    for name, base in (("posthorn-server", bases[0]), ("posthorn-server-2", bases[1])):
        t = time.time()
        podman.play(demo.write(name, NEXT_IMAGE), replace=True)
        wait_for(f"{name} ready on the new image", lambda b=base: ready(b))
        took[name] = round(time.time() - t, 1)
    t = time.time()
    podman.play(demo.write("posthorn-migrate", NEXT_IMAGE), replace=True)
    assert podman("wait", demo.container_name("posthorn-migrate")) == "0"
    took["migrate"] = round(time.time() - t, 1)
    t = time.time()
    stops.append(t)
    podman.play(demo.write("posthorn-dispatcher", NEXT_IMAGE), replace=True)
    took["posthorn-dispatcher"] = round(time.time() - t, 1)
    stops.append(time.time())  # the old dispatcher stopped somewhere in between
    image = podman("inspect", demo.container_name("posthorn-dispatcher"), "--format", "{{.ImageName}}")
    assert image == NEXT_IMAGE, image
    log(f"rolling upgrade to {NEXT_IMAGE} (s per step): {json.dumps(took)}")


def counts(sender: Sender, receiver: Receiver, stops: list[float],
           phases: list[tuple[str, float]]) -> dict:
    """Acknowledged, delivered, lost and duplicated events, in all and by phase (the
    phase an event was acknowledged in; a duplicate's, by its first delivery)."""
    acked = sender.acked()
    wait_for("every acknowledged event delivered",
             lambda: not set(acked) - receiver.seen(), DRAIN_TIMEOUT)
    firsts: dict[str, float] = {}
    dups = []
    for t, eid in receiver.receipts():
        if eid in firsts:
            dups.append(eid)
        else:
            firsts[eid] = t

    def phase_of(t: float) -> str:
        return [name for name, start in phases if start <= t][-1] if t >= phases[0][1] else ""

    result: dict = {"rate_per_s": round(sender.rate(), 1), "not_acknowledged": sender.failed}
    for name in [p for p, _ in phases] + ["all"]:
        ids = {e for e, t in acked.items() if name in ("all", phase_of(t))}
        result[name] = {"acknowledged": len(ids), "delivered": len(ids & set(firsts)),
                        "lost": len(ids - set(firsts)),
                        "duplicated": sum(1 for e in dups if name in ("all", phase_of(firsts[e])))}
    late = [e for e in dups if not any(s - DUPLICATE_WINDOW <= firsts[e] <= s + 1 for s in stops)]
    if dups:
        offsets = sorted(round(firsts[e] - min(stops, key=lambda s: abs(s - firsts[e])), 1)
                         for e in dups)
        log(f"duplicates' first deliveries, seconds from the nearest dispatcher kill or stop: "
            f"{offsets}")
    assert result["all"]["lost"] == 0, result
    assert not late, f"duplicates away from a dispatcher's kill or stop: {late[:5]}"
    return result


def run(docs: list[dict]) -> None:
    started = time.time()
    work = tempfile.mkdtemp(prefix="posthorn-kube-", dir="/var/tmp")
    podman = Podman(work)
    demo = Demo(docs, work)
    clean(podman, demo)
    build_images(podman)
    receiver = Receiver()
    try:
        start(podman, demo)
        result = scenario(podman, demo, receiver)
        log("events: " + json.dumps(result))
        readiness_follows_the_database(podman, demo)
    except Exception:
        for name in ("posthorn-server", "posthorn-server-2", "posthorn-dispatcher"):
            log(f"{name} log tail:\n" + podman("logs", "--tail", "15", demo.container_name(name),
                                               check=False))
        raise
    finally:
        receiver.close()
        if os.environ.get("POSTHORN_KUBE_KEEP") != "1":
            clean(podman, demo)
            shutil.rmtree(work, ignore_errors=True)
            # Each run's images differ (a new build): keep none of them, nor their layers.
            podman("rmi", IMAGE, NEXT_IMAGE, check=False)
            podman("image", "prune", "-f", check=False)
    log(f"kube play scenario passed in {time.time() - started:.1f} s")

