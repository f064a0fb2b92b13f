"""`posthorn listen` against a real server (started by sdk/test.sh): the CLI forwards a
project's deliveries to a receiver on this machine that verifies them with this library,
and the receiver's answers are the attempts' outcomes."""

import http.server
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest
from posthorn import ApiError, Client
from posthorn.webhooks import WebhookVerificationError, verify

from conftest import _env, free_port
from test_server import wait_for


class LocalReceiver:
    """A receiver on loopback that verifies every request with the session's secret and
    answers each event with the statuses its data lists under `answers` (then 200)."""

    def __init__(self):
        self.secret = None
        self.verified = []  # event ids, in arrival order
        self.refused = 0
        self.port = free_port()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                try:
                    event = verify(body, dict(self.headers.items()), owner.secret)
                except WebhookVerificationError:
                    owner.refused += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                answers = event["data"].get("answers", [])
                earlier = len(owner.seen(event["event_id"]))
                status = answers[earlier] if earlier < len(answers) else 200
                owner.verified.append((event["event_id"], status))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(json.dumps({"seen": event["event_id"]}).encode())

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/webhooks"

    def seen(self, event_id):
        return [s for e, s in self.verified if e == event_id]

    def stop(self):
        self.server.shutdown()


class Listen:
    """`posthorn listen` as a developer runs it, its output collected line by line."""

    def __init__(self, base_url, key, forward, *extra):
        env = {**os.environ, "POSTHORN_API_KEY": key}
        self.proc = subprocess.Popen(
            [_env("POSTHORN_BIN"), "listen", "--forward", forward, "--server", base_url,
             "--print-secret", *extra],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.out, self.err = [], []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True).start()
        first = wait_for("the secret line", lambda: self.out[:1] or self.proc.poll() is not None)
        assert self.out, f"posthorn listen exited: {self.err}"
        assert first[0].startswith("secret: whsec_"), first
        self.secret = first[0].split(" ", 1)[1]
        wait_for("the connection", lambda: any("connected" in l for l in self.err))

    @staticmethod
    def _read(stream, lines):
        for line in stream:
            lines.append(line.rstrip("\n"))

    def stop(self, sig=signal.SIGINT):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(15)


@pytest.fixture
def receiver():
    r = LocalReceiver()
    yield r
    r.stop()


def session_of(client, forward):
    hooks = [w for w in client.webhooks.list() if w.destination and w.url == forward]
    assert len(hooks) == 1, hooks
    return hooks[0]


def test_listen_forwards_signed_deliveries_and_records_the_local_answers(base_url, business_key, receiver):
    client = Client(business_key, base_url)
    name = f"py-{uuid.uuid4().hex[:8]}"
    types = [a for t in ("listen.ok", "listen.flaky", "listen.bad", "listen.away") for a in ("--events", t)]
    cli = Listen(base_url, business_key, receiver.url, "--name", name, *types)
    receiver.secret = cli.secret
    try:
        hook = session_of(client, receiver.url)
        assert (hook.destination.type, hook.destination.name, hook.destination.connected) == ("listen", name, True)

        # Delivered, verified by the receiver with this library, the answer recorded.
        sent = client.events.send("listen.ok", {"n": 1})
        wait_for("the forwarded event", lambda: receiver.seen(sent.id))
        ok = wait_for("its outcome", lambda: [d for d in client.deliveries.list(event_id=sent.id).data
                                              if d.status == "succeeded"])[0]
        assert (ok.endpoint_id, ok.response_status, ok.attempt) == (hook.id, 200, 1)
        assert "seen" in client.deliveries.get(ok.id).response_body
        wait_for("the CLI's line", lambda: [l for l in cli.out if sent.id in l and " 200 " in l])

        # A Retry goes to the laptop again, with a new request id.
        again = client.deliveries.retry(ok.id)
        wait_for("the retried event", lambda: receiver.seen(sent.id) == [200, 200])
        retried = wait_for("the retry's outcome", lambda: (lambda d: d.status == "succeeded" and d)(
            client.deliveries.get(again.id)))
        assert retried.request_id != ok.request_id and retried.trigger == "manual_retry"

        # A 500 from the laptop is retried on the schedule, then delivered.
        flaky = client.events.send("listen.flaky", {"answers": [500]})
        wait_for("the retry", lambda: receiver.seen(flaky.id) == [500, 200])
        attempts = wait_for("both attempts", lambda: (lambda a: len(a) == 2 and a)(
            sorted(client.deliveries.list(event_id=flaky.id).data, key=lambda d: d.attempt)))
        assert [(a.attempt, a.status, a.response_status) for a in attempts] == [
            (1, "failed", 500), (2, "succeeded", 200)]

        # A 400 will not change: a dead letter at once.
        bad = client.events.send("listen.bad", {"answers": [400]})
        dead = wait_for("the dead letter", lambda: [d for d in client.deliveries.list(event_id=bad.id).data
                                                    if d.status == "dead_letter"])
        assert (dead[0].attempt, dead[0].response_status) == (1, 400)

        # Killed outright: what is sent meanwhile waits, and a CLI restarted with the same
        # name reattaches (same endpoint, same secret) and gets all of it.
        cli.stop(signal.SIGKILL)
        away = [client.events.send("listen.away", {"n": i}).id for i in range(5)]
        time.sleep(0.5)
        assert not any(receiver.seen(e) for e in away)
        again = Listen(base_url, business_key, receiver.url, "--name", name, *types)
        cli = again
        assert again.secret == receiver.secret
        assert session_of(client, receiver.url).id == hook.id
        wait_for("the events sent while away", lambda: all(receiver.seen(e) == [200] for e in away))
        assert receiver.refused == 0
    finally:
        cli.stop()
    # Named: it outlives its CLI (for 10 minutes), shown as waiting.
    wait_for("the session to wait", lambda: client.webhooks.get(hook.id).destination.connected is False)


def test_another_projects_events_never_reach_a_listen_session(base_url, business_key, trial_keys, receiver):
    client = Client(business_key, base_url)
    other = Client(trial_keys[1], base_url)
    cli = Listen(base_url, business_key, receiver.url, "--events", "iso.created")
    receiver.secret = cli.secret
    try:
        hook = session_of(client, receiver.url)
        theirs = other.events.send("iso.created", {"secret": "theirs"})
        mine = client.events.send("iso.created", {"secret": "mine"})
        wait_for("our event", lambda: receiver.seen(mine.id))
        assert not receiver.seen(theirs.id)
        # The other project's key cannot see or connect to the session.
        with pytest.raises(ApiError) as refused:
            other.webhooks.get(hook.id)
        assert refused.value.status == 404
    finally:
        assert cli.stop() == 0
    # Unnamed: it ends with its CLI.
    wait_for("the session to end", lambda: hook.id not in [w.id for w in client.webhooks.list()])


def api(base_url, key, method, path, body=None, headers=None):
    """(status, JSON answer) of one plain request."""
    req = urllib.request.Request(
        base_url + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_sessions_are_bounded_checked_and_the_project_s_own(base_url, business_key, trial_keys):
    client = Client(business_key, base_url)
    forward = "http://127.0.0.1:9/unused"
    # Refused with the reason: a bad name, a bad URL, a filter that does not compile.
    for body, word in [({"forward": forward, "name": "a b"}, "name"),
                       ({"forward": "ftp://x"}, "url"),
                       ({"forward": forward, "filter": "event.type =="}, "")]:
        status, answer = api(base_url, business_key, "POST", "/public/v1/listen", body)
        assert status == 422 and word in answer["error"]["message"], (body, answer)
    # At most five at once; the sixth is refused naming the limit.
    made = []
    try:
        while True:
            status, answer = api(base_url, business_key, "POST", "/public/v1/listen", {"forward": forward})
            if status != 201:
                break
            made.append(answer["endpoint"]["id"])
            assert answer["secret"].startswith("whsec_") and answer["endpoint"]["destination"]["type"] == "listen"
            assert len(made) <= 5
        assert (status, answer["error"]["code"]) == (422, "limit_reached"), answer
        assert "5 listen sessions" in answer["error"]["message"]
        session = made[0]
        path = f"/public/v1/listen/{session}/connect"
        # A plain GET is told it is a WebSocket; another project's key finds nothing.
        status, answer = api(base_url, business_key, "GET", path)
        assert (status, answer["error"]["code"]) == (426, "upgrade_required")
        status, _ = api(base_url, trial_keys[0], "GET", path,
                        headers={"Connection": "Upgrade", "Upgrade": "websocket",
                                 "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        assert status == 404
        # An ordinary endpoint is no session.
        plain = client.webhooks.create("http://127.0.0.1:9/plain", ["*"])
        status, _ = api(base_url, business_key, "GET", f"/public/v1/listen/{plain.id}/connect")
        assert status == 404
        client.webhooks.delete(plain.id)
    finally:
        for session in made:
            client.webhooks.delete(session)


HAPROXY = """
global
    maxconn 100
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout tunnel 1h
frontend tls
    bind 127.0.0.1:{port} ssl crt {pem}
    default_backend posthorn
backend posthorn
    server posthorn {upstream}
"""


def test_listen_works_through_a_tls_load_balancer(base_url, business_key, receiver, tmp_path):
    """HAProxy terminates TLS in front of the server, as an operator's load balancer does;
    the CLI reaches it at https:// (its WebSocket at wss://), trusting the operator's CA."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Test CA",
            "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "lb.key", "-out", "lb.csr")
    (tmp_path / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "lb.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "san.ext", "-out", "lb.crt")
    (tmp_path / "lb.pem").write_text((tmp_path / "lb.crt").read_text() + (tmp_path / "lb.key").read_text())
    port = free_port()
    (tmp_path / "haproxy.cfg").write_text(HAPROXY.format(
        port=port, pem=tmp_path / "lb.pem", upstream=base_url.removeprefix("http://")))
    lb = subprocess.Popen(["haproxy", "-db", "-f", str(tmp_path / "haproxy.cfg")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    os.environ["SSL_CERT_FILE"] = str(tmp_path / "ca.pem")
    try:
        wait_for("the load balancer", lambda: lb.poll() is not None or _listening(port))
        assert lb.poll() is None, lb.stderr.read()
        cli = Listen(f"https://127.0.0.1:{port}", business_key, receiver.url, "--events", "tls.created")
        receiver.secret = cli.secret
        try:
            sent = Client(business_key, base_url).events.send("tls.created", {"over": "wss"})
            wait_for("the event through the load balancer", lambda: receiver.seen(sent.id) == [200])
        finally:
            assert cli.stop() == 0
    finally:
        del os.environ["SSL_CERT_FILE"]
        lb.terminate()
        lb.wait(10)


def _listening(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False
