"""The retry rules, as pure arithmetic and against a scripted local HTTP server (the
real server cannot be made to answer 503 on demand)."""

import datetime as dt
import email.utils
import http.server
import json
import threading
import time

import pytest
from posthorn import ApiConnectionError, ApiError, Client, Erasure, RateLimitError
from posthorn.retry import RetryPolicy, backoff, parse_retry_after, retry_wait

from conftest import free_port


def test_backoff_doubles_with_jitter_and_is_capped():
    p = RetryPolicy(backoff_base=1.0, backoff_cap=8.0)
    assert [backoff(n, p, lambda: 0.0) for n in range(6)] == [0.5, 1, 2, 4, 4, 4]
    assert [backoff(n, p, lambda: 1.0) for n in range(6)] == [1, 2, 4, 8, 8, 8]
    assert backoff(10_000, p) <= 8.0


def test_retry_after_is_read_as_seconds_or_an_http_date():
    now = 1_700_000_000.0
    assert parse_retry_after("7", now) == 7
    date = email.utils.formatdate(now + 42, usegmt=True)
    assert parse_retry_after(date, now) == pytest.approx(42, abs=1)
    assert parse_retry_after(email.utils.formatdate(now - 42, usegmt=True), now) == 0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


def test_a_429_waits_the_larger_of_retry_after_and_the_backoff():
    p = RetryPolicy(backoff_base=1.0, backoff_cap=30.0)
    assert retry_wait(429, 0, 10.0, p, lambda: 1.0) == 10.0
    assert retry_wait(429, 5, 10.0, p, lambda: 1.0) == 30.0
    assert retry_wait(503, 0, 10.0, p, lambda: 1.0) == 1.0  # Retry-After only counts on 429


class Script(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next scripted (status, headers, body)."""

    answers: list = []
    seen: list = []
    bodies: list = []  # the JSON bodies received (None when empty)

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw_in = self.rfile.read(length)
        type(self).bodies.append(json.loads(raw_in) if raw_in else None)
        type(self).seen.append((self.command, self.path, dict(self.headers)))
        status, headers, body = type(self).answers.pop(0)
        raw = json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Script)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Script.answers, Script.seen, Script.bodies = [], [], []
    sleeps = []
    client = Client("phk_test", f"http://127.0.0.1:{server.server_address[1]}")
    client._transport.sleep = sleeps.append  # record waits instead of waiting
    yield client, Script, sleeps
    server.shutdown()


ERR = {"error": {"code": "internal", "message": "internal error"}}
HOOK = {"id": 1, "url": "https://x.test/h", "events": ["*"], "description": "", "enabled": True,
        "created_at": "2026-11-30T12:00:00.123456789Z", "headers": []}


def test_a_get_is_retried_after_5xx(scripted):
    client, script, sleeps = scripted
    script.answers = [(503, {}, ERR), (500, {}, ERR), (200, {}, HOOK)]
    assert client.webhooks.get(1).id == 1
    assert len(script.seen) == 3 and len(sleeps) == 2


def test_creating_a_webhook_is_not_retried_after_5xx(scripted):
    client, script, _ = scripted
    script.answers = [(503, {}, ERR), (201, {}, HOOK)]
    with pytest.raises(ApiError) as e:
        client.webhooks.create("https://x.test/h", ["*"])
    assert (e.value.status, e.value.code, len(script.seen)) == (503, "internal", 1)


REPLAY = {"id": 7, "status": "running", "total": 2, "queued": 0, "finished": 0, "per_second": 10}


def test_recovering_is_not_retried_after_5xx_but_following_and_cancelling_are(scripted):
    client, script, _ = scripted
    script.answers = [(503, {}, ERR), (202, {}, REPLAY)]
    with pytest.raises(ApiError) as e:
        client.webhooks.recover(1, "2026-11-30T12:00:00Z", until="2026-11-30T13:00:00+01:00")
    assert (e.value.status, len(script.seen)) == (503, 1)
    assert script.seen[0][:2] == ("POST", "/public/v1/webhooks/1/recover")
    assert script.bodies == [{"since": "2026-11-30T12:00:00Z", "until": "2026-11-30T13:00:00+01:00"}]
    # Aware datetimes go as UTC; no `until` is sent unless given.
    script.answers, script.bodies = [(202, {}, REPLAY)], []
    client.webhooks.recover(1, dt.datetime(2026, 11, 30, 13, tzinfo=dt.timezone(dt.timedelta(hours=1))))
    assert script.bodies == [{"since": "2026-11-30T12:00:00Z"}]
    script.answers, script.seen = [(502, {}, ERR), (200, {}, REPLAY)], []
    assert client.replays.get(7).total == 2 and len(script.seen) == 2
    script.answers, script.seen = [(500, {}, ERR), (200, {}, {**REPLAY, "status": "cancelled"})], []
    assert client.replays.cancel(7).status == "cancelled"
    assert [s[:2] for s in script.seen] == [("POST", "/public/v1/replays/7/cancel")] * 2


def test_sending_an_event_is_retried_with_the_same_idempotency_key(scripted):
    client, script, _ = scripted
    script.answers = [(502, {}, ERR), (202, {}, {"id": "evt_1", "deliveries": 0})]
    assert client.events.send("order.paid", {}).id == "evt_1"
    keys = {headers["Idempotency-Key"] for _, _, headers in script.seen}
    assert len(script.seen) == 2 and len(keys) == 1 and keys.pop()


ERASURE = {"id": 9, "status": "running", "subject": None, "event_id": "evt_1",
           "created_at": "2026-11-30T12:00:00Z", "finished_at": None, "events": 1,
           "attempts": 2, "dead_lettered": 0, "inspector_copies": 0}


def test_erasing_is_retried_for_one_event_but_not_for_a_subject(scripted):
    client, script, _ = scripted
    # 202: an attempt was still in flight; 204: done.
    script.answers = [(503, {}, ERR), (202, {}, ERASURE), (204, {}, None)]
    erasure = client.events.erase_data("evt_1")
    assert isinstance(erasure, Erasure) and (erasure.id, erasure.finished_at) == (9, None)
    assert client.events.erase_data("evt_1") is None
    assert [s[:2] for s in script.seen] == [("DELETE", "/public/v1/events/evt_1/data")] * 3
    script.answers, script.seen = [(503, {}, ERR), (202, {}, ERASURE)], []
    with pytest.raises(ApiError) as e:
        client.erasures.create("user:42")
    assert (e.value.status, len(script.seen)) == (503, 1)


def test_a_batch_is_retried_with_the_same_idempotency_keys(scripted):
    client, script, _ = scripted
    accepted = {"data": [{"id": "evt_1", "deliveries": 0}, {"id": "evt_2", "deliveries": 1}]}
    script.answers = [(502, {}, ERR), (202, {}, accepted)]
    sent = client.events.send_batch([
        {"event": "a.b", "data": {}, "subjects": ("user:1",)},
        {"event": "a.b", "data": {}, "id": "mine"},
    ])
    assert [a.id for a in sent] == ["evt_1", "evt_2"]
    first, second = script.bodies
    assert first == second and first["events"][1]["id"] == "mine"
    assert first["events"][0]["id"] and first["events"][0]["subjects"] == ["user:1"]


def test_other_4xx_are_never_retried(scripted):
    client, script, _ = scripted
    script.answers = [(422, {}, {"error": {"code": "invalid", "message": "url: bad"}})]
    with pytest.raises(ApiError) as e:
        client.webhooks.update(1, url="nope")
    assert (e.value.status, e.value.code, e.value.message) == (422, "invalid", "url: bad")
    assert len(script.seen) == 1


def test_a_429_is_retried_after_retry_after_for_any_call(scripted):
    client, script, sleeps = scripted
    limited = {"error": {"code": "rate_limited", "message": "slow down"}}
    script.answers = [(429, {"Retry-After": "3"}, limited), (201, {}, HOOK)]
    assert client.webhooks.create("https://x.test/h", ["*"]).id == 1
    assert sleeps[0] >= 3


def test_a_retry_after_beyond_max_wait_raises(scripted):
    client, script, sleeps = scripted
    limited = {"error": {"code": "rate_limited", "message": "slow down"}}
    script.answers = [(429, {"Retry-After": "3600"}, limited)]
    with pytest.raises(RateLimitError) as e:
        client.events.list()
    assert e.value.retry_after == 3600 and sleeps == []


def test_a_spent_quota_waits_for_the_reset_before_the_next_call(scripted):
    client, script, sleeps = scripted
    reset = int(time.time()) + 20
    spent = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)}
    script.answers = [(200, spent, HOOK), (200, {}, HOOK)]
    client.webhooks.get(1)
    assert sleeps == []
    client.webhooks.get(1)
    assert 18 < sleeps[0] <= 21


def test_connection_errors_are_retried_for_safe_calls_then_raised():
    client = Client("phk_test", f"http://127.0.0.1:{free_port()}", max_retries=2)
    sleeps = []
    client._transport.sleep = sleeps.append
    with pytest.raises(ApiConnectionError):
        client.events.get("evt_1")
    assert len(sleeps) == 2
    sleeps.clear()
    with pytest.raises(ApiConnectionError):
        client.deliveries.retry(1)
    assert sleeps == []
