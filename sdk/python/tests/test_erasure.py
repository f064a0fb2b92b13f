"""Subjects on events, erasure by subject and of one event, against a real `posthorn
serve` (started by sdk/test.sh)."""

import uuid

from posthorn import Client, Erasure, Event

from conftest import free_port
from test_recover import raises
from test_server import wait_for


def test_events_sent_with_a_subject_are_erased_by_it(base_url, business_key):
    client = Client(business_key, base_url)
    # Nothing listens there: attempts fail at once and are dead-lettered within a second.
    hook = client.webhooks.create(f"http://127.0.0.1:{free_port()}/gone", ["erasure.py"])
    subject = f"user:py-{uuid.uuid4().hex[:12]}"
    try:
        sent = client.events.send("erasure.py", {"email": "ana@example.com"},
                                  subjects=[subject, "tenant:7"])
        batch = client.events.send_batch([
            {"event": "erasure.py", "data": {"n": 1}, "subjects": (subject,)},
            {"event": "erasure.py", "data": {"n": 2}},
        ])
        assert [a.deliveries for a in batch] == [1, 1]
        event = client.events.get(sent.id)
        assert isinstance(event, Event)
        assert (event.data, event.subjects) == ({"email": "ana@example.com"}, [subject, "tenant:7"])
        assert (event.erased_at, event.erasure_id) == (None, None)
        assert client.events.get(batch[0].id).subjects == [subject]
        assert client.events.get(batch[1].id).subjects == []

        erasure = client.erasures.create(subject)
        assert isinstance(erasure, Erasure)
        assert (erasure.subject, erasure.event_id) == (subject, None)
        assert erasure.status in ("running", "done")
        done = wait_for("the erasure to be done", lambda: (
            lambda e: e if e.status == "done" else None)(client.erasures.get(erasure.id)),
            timeout=20)
        assert (done.id, done.events) == (erasure.id, 2) and done.finished_at is not None
        for event_id in (sent.id, batch[0].id):
            erased = client.events.get(event_id)
            assert (erased.data, erased.subjects, erased.erasure_id) == (None, [], erasure.id)
            assert erased.erased_at is not None
        kept = client.events.get(batch[1].id)
        assert (kept.data, kept.erased_at) == ({"n": 2}, None)

        # An erased event has nothing left to send again.
        attempt = client.deliveries.list(event_id=sent.id).data[0]
        raises(409, "conflict", client.deliveries.retry, attempt.id)

        # One event by id: erased within the call; erasing it again answers the same.
        assert client.events.erase_data(batch[1].id) is None
        gone = client.events.get(batch[1].id)
        assert gone.data is None and gone.erasure_id not in (None, erasure.id)
        assert client.events.erase_data(batch[1].id) is None
    finally:
        client.webhooks.delete(hook.id)


def test_a_batch_keeps_its_idempotency_keys(base_url, business_key):
    client = Client(business_key, base_url)
    key = f"py-batch-{uuid.uuid4().hex[:12]}"
    items = [{"event": "erasure.py_batch", "data": {"n": 1}, "id": key, "subjects": ["user:1"]}]
    first = client.events.send_batch(items)
    assert client.events.send_batch(items) == first


def test_unknown_erasures_and_events_and_refused_subjects(base_url, business_key):
    client = Client(business_key, base_url)
    raises(404, "not_found", client.erasures.get, 10**12)
    raises(404, "not_found", client.events.erase_data, "evt_unknown")
    raises(422, "invalid", client.erasures.create, "")
    raises(422, "invalid", client.events.send, "erasure.py", {}, subjects=[""])
    raises(422, "invalid", client.events.send, "erasure.py", {},
           subjects=[f"user:{n}" for n in range(11)])
