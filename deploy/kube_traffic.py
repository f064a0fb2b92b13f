"""Traffic for deploy/kube_play.py: a receiver that records every delivery, a sender
of events at a steady rate spread over the servers, and the dashboard's sign-in."""

from __future__ import annotations

import http.cookiejar
import json
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORKERS = 24
# How long one event is retried (other server, same idempotency key) before it counts
# as not acknowledged.
GIVE_UP_S = 30.0


def http_json(url: str, key: str, body: dict, headers: dict | None = None) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "authorization": f"Bearer {key}", "content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def sign_in(base: str, email: str, password: str) -> None:
    """Signs in as the dashboard's form does and loads the deliveries page."""
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    body = urllib.parse.urlencode({"email": email, "password": password}).encode()
    opener.open(urllib.request.Request(base + "/api/login", data=body), timeout=10).read()
    with opener.open(base + "/developers/deliveries", timeout=10) as r:
        page = r.read().decode()
    assert r.status == 200 and "delivery-row" in page, "the deliveries page lists rows"


class Receiver:
    """Answers 200 to every delivery and records (time, webhook-id)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._got: list[tuple[float, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with outer._lock:
                    outer._got.append((time.time(), self.headers.get("webhook-id") or ""))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a dispatcher killed mid-request resets its connections

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def receipts(self) -> list[tuple[float, str]]:
        with self._lock:
            return list(self._got)

    def seen(self) -> set[str]:
        return {eid for _, eid in self.receipts()}

    def close(self) -> None:
        self._server.shutdown()


class Sender:
    """Events at `rate` per second, alternating between the servers as a Service would;
    a refused or failed request goes to the other server with the same idempotency key
    (as a client retries), until GIVE_UP_S."""

    def __init__(self, bases: list[str], key: str, rate: float) -> None:
        self.bases, self.key, self.rate_wanted = bases, key, rate
        self._jobs: queue.Queue = queue.Queue()
        self._acked: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.failed = 0
        self._threads: list[threading.Thread] = []
        self._span = (0.0, 0.0)

    def start(self) -> None:
        self._span = (time.time(), 0.0)
        self._threads = [threading.Thread(target=self._tick, daemon=True)]
        self._threads += [threading.Thread(target=self._work, args=(i,), daemon=True)
                          for i in range(WORKERS)]
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        self._span = (self._span[0], time.time())
        for t in self._threads:
            t.join(GIVE_UP_S + 15)

    def acked(self) -> dict[str, float]:
        with self._lock:
            return dict(self._acked)

    def rate(self) -> float:
        start, end = self._span
        return len(self._acked) / max(end - start, 1e-9)

    def _tick(self) -> None:
        n, start = 0, time.time()
        while not self._stop.is_set():
            n += 1
            self._jobs.put((n, str(uuid.uuid4())))
            time.sleep(max(0.0, start + n / self.rate_wanted - time.time()))
        for _ in range(WORKERS):
            self._jobs.put(None)

    def _work(self, worker: int) -> None:
        while (job := self._jobs.get()) is not None:
            n, idem = job
            event = self._send(n, idem)
            with self._lock:
                if event:
                    self._acked[event] = time.time()
                else:
                    self.failed += 1

    def _send(self, n: int, idem: str) -> str | None:
        deadline = time.time() + GIVE_UP_S
        attempt = 0
        while time.time() < deadline:
            base = self.bases[(n + attempt) % len(self.bases)]
            try:
                body = {"event": "kube.load", "data": {"n": n}}
                return http_json(base + "/public/v1/events", self.key, body,
                                 {"idempotency-key": idem})["id"]
            except (urllib.error.URLError, OSError, ValueError):
                attempt += 1
                time.sleep(0.2)
        return None
