"""Recovering an endpoint's failures and following the replay, against a real
`posthorn serve` (started by sdk/test.sh with a retry schedule of 200 ms steps)."""

import datetime as dt
import http.server
import json
import threading

import pytest
from posthorn import ApiError, Client, Operator, Replay

from test_server import wait_for


class Flaky(http.server.BaseHTTPRequestHandler):
    """A receiver answering `status` to every delivery and noting (status, event id)."""

    status = 500
    seen: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append((type(self).status, json.loads(body)["event_id"]))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def flaky():
    Flaky.status, Flaky.seen = 500, []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Flaky, server.server_address[1]
    server.shutdown()
    server.server_close()


def raises(status, code, call, *args, **kwargs):
    with pytest.raises(ApiError) as e:
        call(*args, **kwargs)
    assert (e.value.status, e.value.code) == (status, code), e.value
    return e.value


def test_recover_replays_the_dead_letters_once_and_the_replay_can_be_followed(
    base_url, business_key, flaky
):
    receiver, port = flaky
    client = Client(business_key, base_url)
    hook = client.webhooks.create(f"http://127.0.0.1:{port}/hook", ["recover.py"])
    try:
        sent = [client.events.send("recover.py", {"n": n}).id for n in range(2)]
        # Every automatic attempt fails until the schedule is spent: dead letters.
        for event_id in sent:
            wait_for(f"{event_id} to be dead-lettered", lambda: [
                d for d in client.deliveries.list(event_id=event_id).data
                if d.status == "dead_letter"], timeout=60)
        assert {e for s, e in receiver.seen if s == 500} == set(sent)

        receiver.status = 200
        since = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)
        replay = client.webhooks.recover(hook.id, since)
        assert isinstance(replay, Replay)
        assert (replay.total, replay.status in ("running", "done")) == (2, True)
        assert replay.per_second > 0
        done = wait_for("the replay to finish", lambda: (
            lambda r: r if r.status == "done" and r.finished == r.total else None)(
                client.replays.get(replay.id)))
        assert (done.id, done.total, done.queued, done.finished) == (replay.id, 2, 2, 2)
        wait_for("the receiver to get both again",
                 lambda: {e for s, e in receiver.seen if s == 200} == set(sent))
        assert sorted(e for s, e in receiver.seen if s == 200) == sorted(sent)  # once each

        # Nothing fails any more: an empty replay (times as text this time), done at once.
        now = dt.datetime.now(dt.timezone.utc)
        empty = client.webhooks.recover(
            hook.id, since.isoformat(), until=(now + dt.timedelta(minutes=1)).isoformat())
        assert (empty.total, empty.queued) == (0, 0) and empty.id != replay.id
        wait_for("the empty replay to be done", lambda: client.replays.get(empty.id).status == "done")
        cancelled = client.replays.cancel(empty.id)
        assert cancelled.id == empty.id and cancelled.status in ("done", "cancelled")
        assert client.replays.cancel(replay.id) == done  # a finished replay is left as it was

        # A window that ends before it starts is empty; errors: unknown replay or endpoint.
        empty = client.webhooks.recover(hook.id, now, until=now - dt.timedelta(hours=1))
        assert (empty.total, empty.status) == (0, "done")
        raises(404, "not_found", client.replays.get, 10**12)
        raises(404, "not_found", client.replays.cancel, 10**12)
        raises(404, "not_found", client.webhooks.recover, 10**12, since)
        raises(422, "invalid", client.webhooks.recover, hook.id, "yesterday")
        with pytest.raises(ValueError):
            client.webhooks.recover(hook.id, dt.datetime.now())  # naive: refused before sending
    finally:
        client.webhooks.delete(hook.id)


def test_another_projects_endpoint_and_replay_are_not_found(base_url, business_key, operator_key):
    client = Client(business_key, base_url)
    hook = client.webhooks.create("https://example.com/recover-py", ["recover.other"])
    op = Operator(operator_key, base_url)
    project = op.projects.create("Python recover, other project")
    try:
        since = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=1)
        replay = client.webhooks.recover(hook.id, since)
        other = Client(op.api_keys.create(project.id, "other").key, base_url)
        raises(404, "not_found", other.webhooks.recover, hook.id, since)
        raises(404, "not_found", other.replays.get, replay.id)
        raises(404, "not_found", other.replays.cancel, replay.id)
        wait_for("the replay to finish", lambda: client.replays.get(replay.id).status == "done")
    finally:
        client.webhooks.delete(hook.id)
        op.projects.delete(project.id)
