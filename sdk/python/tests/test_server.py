"""Against a real `posthorn serve` on a fresh database (started by sdk/test.sh)."""

import dataclasses
import datetime as dt
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import typing
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from posthorn import (
    ApiError,
    Client,
    ClientCertificate,
    Destination,
    Delivery,
    DeliveryDetail,
    Erasure,
    Event,
    EventAccepted,
    EventTypeSchema,
    FilteredOut,
    Replay,
    Webhook,
)
from posthorn.webhooks import verify

from conftest import free_port

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def readme_receiver() -> str:
    """The Flask receiver exactly as the README shows it."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return next(b for b in blocks if "from flask import" in b)


class Receiver:
    """The README's receiver under `flask run`, its stdout collected line by line."""

    def __init__(self, directory: pathlib.Path, secret: str, port: int) -> None:
        (directory / "receiver.py").write_text(readme_receiver())
        env = {**os.environ, "POSTHORN_WEBHOOK_SECRET": secret, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flask", "--app", "receiver", "run", "--port", str(port)],
            cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        self.lines: list = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the receiver did not start")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def handled(self, event_id: str) -> list:
        return [l for l in self.lines if l.startswith("handled ") and l.endswith(event_id)]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def wait_for(what, check, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def only(headers, prefix):
    return [(k, v) for k, v in headers if k.lower().startswith(prefix)]


def test_a_delivery_reaches_the_readme_receiver_and_verifies(base_url, business_key, tmp_path):
    client = Client(business_key, base_url)
    port = free_port()
    hook = client.webhooks.create(f"http://127.0.0.1:{port}/webhooks", ["order.paid"],
                                  description="python receiver")
    assert hook.secret and hook.secret.startswith("whsec_")
    receiver = Receiver(tmp_path, hook.secret, port)
    try:
        sent = client.events.send("order.paid", {"order": 42, "note": "ünïcode"})
        assert sent.id.startswith("evt_") and sent.deliveries == 1
        wait_for("the receiver to handle the event", lambda: receiver.handled(sent.id))
        first = wait_for("the attempt to succeed", lambda: [
            d for d in client.deliveries.list(event_id=sent.id).data if d.status == "succeeded"])[0]
        assert (first.attempt, first.response_status, first.endpoint_id) == (1, 204, hook.id)

        # What the server sent verifies under each scheme on its own.
        detail = client.deliveries.get(first.id)
        assert isinstance(detail, DeliveryDetail) and detail.request_headers
        for prefix in ("webhook-", "x-botix-"):
            event = verify(detail.payload, only(detail.request_headers, prefix), hook.secret)
            assert event["event_id"] == sent.id and event["data"]["note"] == "ünïcode"

        # A manual retry is the same event again: answered 2xx, handled once.
        again = client.deliveries.retry(first.id)
        assert again.attempt == 2 and again.event_id == sent.id
        wait_for("the retry to succeed", lambda: client.deliveries.get(again.id).status == "succeeded")
        assert len(receiver.handled(sent.id)) == 1

        # After a rotation deliveries carry both signatures: the receiver, still on the
        # old secret, accepts them, and so does the new secret.
        rotated = client.webhooks.rotate_secret(hook.id)
        assert rotated.secret != hook.secret
        later = client.events.send("order.paid", {"order": 43})
        wait_for("the post-rotation event", lambda: receiver.handled(later.id))
        d = wait_for("its attempt", lambda: [x for x in client.deliveries.iter(event_id=later.id)
                                              if x.status == "succeeded"])[0]
        verify(client.deliveries.get(d.id).payload,
               client.deliveries.get(d.id).request_headers, rotated.secret)

        # A forged request is refused by the receiver.
        forged = urllib.request.Request(
            f"http://127.0.0.1:{port}/webhooks", data=b'{"event_id":"evt_forged"}', method="POST",
            headers={"webhook-id": "evt_forged", "webhook-timestamp": str(int(time.time())),
                     "webhook-signature": "v1,AAAA"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(forged, timeout=10)
        assert refused.value.code == 400
    finally:
        receiver.stop()
        client.webhooks.delete(hook.id)
    with pytest.raises(ApiError) as gone:
        client.webhooks.get(hook.id)
    assert (gone.value.status, gone.value.code) == (404, "not_found")


def test_an_ed25519_endpoints_deliveries_verify_with_its_public_key(base_url, business_key, tmp_path):
    client = Client(business_key, base_url)
    port = free_port()
    hook = client.webhooks.create(f"http://127.0.0.1:{port}/webhooks", ["order.paid"],
                                  signature_scheme="ed25519")
    assert (hook.signature_scheme, hook.secret) == ("ed25519", None)
    assert hook.public_key and hook.public_key.startswith("whpk_")
    # The README's receiver, given the public key where the secret would go.
    receiver = Receiver(tmp_path, hook.public_key, port)
    try:
        sent = client.events.send("order.paid", {"order": 44, "note": "ünïcode"})
        wait_for("the receiver to handle the event", lambda: receiver.handled(sent.id))
        d = wait_for("the attempt to succeed", lambda: [
            x for x in client.deliveries.list(event_id=sent.id).data if x.status == "succeeded"])[0]
        detail = client.deliveries.get(d.id)
        names = {k.lower(): v for k, v in detail.request_headers}
        assert "x-botix-signature" not in names
        assert all(e.startswith("v1a,") for e in names["webhook-signature"].split())
        assert verify(detail.payload, detail.request_headers, hook.public_key)["event_id"] == sent.id
    finally:
        receiver.stop()
        client.webhooks.delete(hook.id)


def test_webhooks_crud(base_url, business_key):
    client = Client(business_key, base_url)
    hook = client.webhooks.create("https://example.com/crud", ["*"], headers={"X-Token": "t"})
    assert hook.headers == ["X-Token"] and hook.events == ["*"]
    assert hook.created_at.tzinfo is not None
    changed = client.webhooks.update(hook.id, events=["a.b", "c.d"], enabled=False,
                                     description="off")
    assert (changed.events, changed.enabled, changed.description) == (["a.b", "c.d"], False, "off")
    assert changed.secret is None
    assert hook.id in [w.id for w in client.webhooks.list()]
    assert client.webhooks.get(hook.id) == changed
    client.webhooks.delete(hook.id)
    with pytest.raises(ApiError) as bad:
        client.webhooks.create("ftp://example.com", ["*"])
    assert (bad.value.status, bad.value.code) == (422, "invalid")


def test_a_broker_destination_is_created_and_read_back_without_its_credentials(base_url, business_key):
    client = Client(business_key, base_url)
    hook = client.webhooks.create(None, ["*"], destination={
        "type": "redis", "url": "redis://:pw@10.20.30.40:6379/1", "stream": "orders"})
    d = hook.destination
    assert (d.type, d.url, d.stream, d.maxlen, d.credentials_set) == (
        "redis", "redis://10.20.30.40:6379/1", "orders", 100000, True)
    assert hook.url == "redis://10.20.30.40:6379/1 stream=orders"
    changed = client.webhooks.update(hook.id, destination={
        "type": "redis", "url": "redis://10.20.30.40:6379/1", "stream": "invoices"})
    assert (changed.destination.stream, changed.destination.credentials_set) == ("invoices", True)
    assert [w.destination for w in client.webhooks.list() if w.id == hook.id] == [changed.destination]
    with pytest.raises(ApiError) as bad:
        client.webhooks.create(None, ["*"], destination={"type": "nats", "url": "nats://h", "subject": "a.*"})
    assert bad.value.status == 422 and "wildcards" in bad.value.message
    client.webhooks.delete(hook.id)


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """A self-signed certificate (CN=sdk-client, 30 days), its key and a key of another,
    made by the openssl command line so the tests need no crypto package."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is not on PATH: the client certificate tests need it")
    d = tmp_path_factory.mktemp("pem")
    curve = ["-pkeyopt", "ec_paramgen_curve:prime256v1"]
    for args in (
        ["req", "-x509", "-newkey", "ec", *curve, "-nodes", "-keyout", "key.pem",
         "-out", "cert.pem", "-days", "30", "-subj", "/CN=sdk-client"],
        ["genpkey", "-algorithm", "EC", *curve, "-out", "other.pem"],
    ):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    return {name: (d / f"{name}.pem").read_text() for name in ("cert", "key", "other")}


def test_a_client_certificate_is_set_shown_and_removed(base_url, business_key, pem):
    client = Client(business_key, base_url)
    pair = {"cert": pem["cert"], "key": pem["key"]}
    hook = client.webhooks.create("https://example.com/mtls", ["*"], client_certificate=pair)
    try:
        cert = hook.client_certificate
        assert isinstance(cert, ClientCertificate) and cert.subject == "CN=sdk-client"
        days = (cert.not_after - dt.datetime.now(dt.timezone.utc)).days
        assert cert.not_after.tzinfo is not None and 28 <= days <= 30
        assert client.webhooks.get(hook.id).client_certificate == cert
        # Absent leaves it as it is; null removes it.
        assert client.webhooks.update(hook.id, description="kept").client_certificate == cert
        removed = client.webhooks.update(hook.id, remove_client_certificate=True)
        assert removed.client_certificate is None
        assert client.webhooks.get(hook.id).client_certificate is None
        assert client.webhooks.update(hook.id, client_certificate=pair).client_certificate == cert
        with pytest.raises(ValueError):  # refused before sending: set and remove at once
            client.webhooks.update(hook.id, client_certificate=pair, remove_client_certificate=True)
    finally:
        client.webhooks.delete(hook.id)
    with pytest.raises(ApiError) as refused:
        client.webhooks.create("https://example.com/mtls", ["*"],
                               client_certificate={"cert": pem["cert"], "key": pem["other"]})
    assert (refused.value.status, refused.value.code) == (422, "invalid")
    assert refused.value.message == "client_certificate: the key does not belong to the first certificate"


def test_a_filter_decides_which_events_an_endpoint_gets(base_url, business_key):
    client = Client(business_key, base_url)
    kind = "payment.filtered_py"
    # Refused when saved, the message saying where.
    with pytest.raises(ApiError) as bad:
        client.webhooks.create("https://example.com/filtered", [kind], filter="data.amount >")
    assert (bad.value.status, bad.value.code) == (422, "invalid")
    assert bad.value.message.startswith("filter: ") and "at 1:14" in bad.value.message
    hook = client.webhooks.create("https://example.com/filtered", [kind], filter="data.amount > 1000")
    try:
        assert hook.filter == "data.amount > 1000"
        assert client.webhooks.get(hook.id).filter == "data.amount > 1000"
        with pytest.raises(ApiError) as bad:
            client.webhooks.update(hook.id, filter="data.amount >")
        assert (bad.value.status, bad.value.code) == (422, "invalid")

        # Too small: no attempt, and the event says which endpoint it skipped and why.
        small = client.events.send(kind, {"amount": 5})
        assert small.deliveries == 0
        got = client.events.get(small.id)
        assert got.deliveries == 0
        assert got.filtered_out == [FilteredOut(endpoint_id=hook.id, reason="the filter was false")]
        assert isinstance(got.filtered_out[0], FilteredOut)
        listed = wait_for("the event in the list", lambda: [
            e for e in client.events.list(type=kind).data if e.id == small.id])
        assert listed[0].filtered_out == got.filtered_out
        big = client.events.send(kind, {"amount": 5000})
        assert big.deliveries == 1
        got = client.events.get(big.id)
        assert (got.deliveries, got.filtered_out) == (1, [])

        # Absent leaves it as it is; null removes it.
        assert client.webhooks.update(hook.id, description="kept").filter == "data.amount > 1000"
        assert client.webhooks.update(hook.id, filter="data.amount > 10").filter == "data.amount > 10"
        assert client.webhooks.update(hook.id, remove_filter=True).filter is None
        assert client.webhooks.get(hook.id).filter is None
        assert client.events.send(kind, {"amount": 5}).deliveries == 1
        with pytest.raises(ValueError):  # refused before sending: set and remove at once
            client.webhooks.update(hook.id, filter="true", remove_filter=True)
    finally:
        client.webhooks.delete(hook.id)


def test_an_event_types_schema_refuses_data_that_fails_it(base_url, business_key):
    client = Client(business_key, base_url)
    kind = "order.paid"
    schema = {"type": "object", "required": ["amount"],
              "properties": {"amount": {"type": "integer", "minimum": 1}}}
    try:
        first = client.event_types.set_schema(kind, schema)
        assert isinstance(first, EventTypeSchema)
        assert (first.event, first.version, first.schema) == (kind, 1, schema)
        assert first.updated_at.tzinfo is not None
        assert client.event_types.get_schema(kind) == schema

        # Data that fails it is refused, the message naming the path and the rule.
        with pytest.raises(ApiError) as refused:
            client.events.send(kind, {"amount": 0})
        assert (refused.value.status, refused.value.code) == (422, "invalid")
        assert refused.value.message.startswith("data.amount:") and "minimum" in refused.value.message
        assert client.events.send(kind, {"amount": 5}).id.startswith("evt_")

        again = client.event_types.set_schema(kind, schema)
        assert (again.version, again.schema) == (2, schema)
        assert again.updated_at >= first.updated_at
        with pytest.raises(ApiError) as bad:  # nothing is fetched: only `#…` references
            client.event_types.set_schema(kind, {"$ref": "https://example.com/x.json"})
        assert (bad.value.status, bad.value.code) == (422, "invalid")
        assert bad.value.message.startswith("schema")
        assert client.event_types.get_schema(kind) == schema  # the refused one changed nothing

        client.event_types.delete_schema(kind)
        with pytest.raises(ApiError) as gone:
            client.event_types.get_schema(kind)
        assert (gone.value.status, gone.value.code) == (404, "not_found")
        assert client.events.send(kind, {"amount": 0}).id.startswith("evt_")
    finally:
        # Other tests send `order.paid` events of their own shape.
        try:
            client.event_types.delete_schema(kind)
        except ApiError as e:
            assert e.status == 404


def test_an_ordering_key_is_sent_and_read_back(base_url, business_key):
    client = Client(business_key, base_url)
    hook = client.webhooks.create("https://example.com/ordered", ["order.keyed"])
    sent = client.events.send("order.keyed", {"n": 1}, ordering_key="customer-7")
    assert client.events.get(sent.id).ordering_key == "customer-7"
    # Its attempts (a retry may already be queued: example.com does not answer here).
    page = client.deliveries.list(ordering_key="customer-7")
    assert page.data and {(d.event_id, d.ordering_key) for d in page.data} == {(sent.id, "customer-7")}
    client.webhooks.delete(hook.id)


def test_the_iterator_walks_250_events_each_exactly_once(base_url, business_key):
    client = Client(business_key, base_url)
    kind = f"walk.py_{int(time.time())}"
    with ThreadPoolExecutor(4) as pool:
        sent = list(pool.map(lambda n: client.events.send(kind, {"n": n}).id, range(250)))
    assert len(set(sent)) == 250

    first = client.events.list(type=kind, limit=100)
    assert len(first.data) == 100 and first.has_more and first.next_cursor

    it = client.events.iter(type=kind, page_size=100)
    seen = [e.id for e in it]
    # Rows of transactions still open are held back; go on from the stored cursor.
    deadline = time.time() + 30
    while len(seen) < 250 and time.time() < deadline:
        time.sleep(0.5)
        it = client.events.iter(type=kind, cursor=it.cursor, page_size=100)
        seen += [e.id for e in it]
    assert len(seen) == 250 and set(seen) == set(sent)
    assert client.events.get(sent[7]).data == {"n": 7}
    # The stored cursor resumes after the last one: nothing is seen twice.
    assert list(client.events.iter(type=kind, cursor=it.cursor)) == []


def sixty_calls(key, base_url, threshold):
    log = []
    client = Client(key, base_url, rate_limit_threshold=threshold, on_response=log.append)
    results = [client.events.send("rate.test", {"n": n}) for n in range(60)]
    return results, log


def assert_no_call_before_its_wait(log, proactive):
    """After a 429 no request goes out before Retry-After has passed; a proactive client
    also sends none between a reply that spent the quota and the reset."""
    for prev, nxt in zip(log, log[1:]):
        if prev.status == 429:
            wait = float(prev.headers["retry-after"])
            assert nxt.sent_at >= prev.received_at + wait, (prev, nxt)
        if proactive and prev.headers.get("x-ratelimit-remaining") == "0":
            assert nxt.sent_at >= float(prev.headers["x-ratelimit-reset"]), (prev, nxt)


def test_sixty_calls_on_a_trial_key_all_succeed_and_none_goes_early(base_url, trial_keys):
    # Both at once, on two trial projects: the default client, which waits for the reset
    # when the quota is spent, and one that only reacts to 429s.
    with ThreadPoolExecutor(2) as pool:
        proactive = pool.submit(sixty_calls, trial_keys[0], base_url, 1)
        reactive = pool.submit(sixty_calls, trial_keys[1], base_url, 0)
        (ok_p, log_p), (ok_r, log_r) = proactive.result(), reactive.result()
    for ok, log, is_proactive in ((ok_p, log_p, True), (ok_r, log_r, False)):
        assert len(ok) == 60 and len({r.id for r in ok}) == 60
        assert sum(1 for a in log if a.status == 202) == 60
        assert all(a.status in (202, 429) for a in log)
        assert_no_call_before_its_wait(log, is_proactive)
    # Once the default client has seen the quota it never earns a 429 (before that, a
    # key already used this minute may refuse its first call).
    first_ok = next(i for i, a in enumerate(log_p) if a.status == 202)
    assert not [a for a in log_p[first_ok:] if a.status == 429], "the default client earned a 429"
    assert [a for a in log_r if a.status == 429], "60 calls at 30/min must meet a 429"


# Models and their schemas in /public/v1/openapi.json.
MODELS = {
    "Webhook": Webhook,
    "ClientCertificateOut": ClientCertificate,
    "Destination": Destination,
    "EventAccepted": EventAccepted,
    "Event": Event,
    "FilteredOut": FilteredOut,
    "Delivery": Delivery,
    "DeliveryDetail": DeliveryDetail,
    "Replay": Replay,
    "Erasure": Erasure,
    "EventTypeSchema": EventTypeSchema,
}


def schema_properties(doc, schema):
    """(properties, required) of a schema, following $ref and allOf."""
    if "$ref" in schema:
        return schema_properties(doc, doc["components"]["schemas"][schema["$ref"].split("/")[-1]])
    props, required = dict(schema.get("properties", {})), set(schema.get("required", []))
    for part in schema.get("allOf", []):
        p, r = schema_properties(doc, part)
        props.update(p)
        required |= r
    return props, required


def json_types(doc, prop):
    """The set of JSON types a property allows ('any' for no constraint)."""
    if "$ref" in prop:
        return json_types(doc, doc["components"]["schemas"][prop["$ref"].split("/")[-1]])
    if "oneOf" in prop:
        return set().union(*(json_types(doc, p) for p in prop["oneOf"]))
    if "type" not in prop:
        return {"any"}
    types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    return {("date-time" if t == "string" and prop.get("format") == "date-time" else t) for t in types}


def hint_types(hint):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return set().union(*(hint_types(a) for a in args))
    if dataclasses.is_dataclass(hint):
        return {"object"}
    return {
        type(None): {"null"}, int: {"integer"}, str: {"string"}, bool: {"boolean"},
        dt.datetime: {"date-time"}, list: {"array"}, dict: {"object"}, typing.Any: {"any"},
    }[origin or hint]


def refs(prop):
    """The schemas a property names, directly or through oneOf."""
    return {p["$ref"].split("/")[-1] for p in [prop, *prop.get("oneOf", [])] if "$ref" in p}


def test_models_match_the_openapi_document(openapi):
    for name, cls in MODELS.items():
        props, required = schema_properties(openapi, {"$ref": f"#/components/schemas/{name}"})
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert set(fields) == set(props), name
        for field, prop in props.items():
            expected = json_types(openapi, prop)
            if field not in required:  # an absent field reads as None
                expected |= {"null"}
                assert fields[field].default is None, f"{name}.{field} may be absent"
            assert hint_types(hints[field]) == expected, f"{name}.{field}"
            for ref in refs(prop) & set(MODELS):  # a nested model is the one named by the schema
                assert MODELS[ref] in typing.get_args(hints[field]) + (hints[field],), f"{name}.{field}"
    # Page(data, has_more, next_cursor) is the envelope {data, meta{next_cursor, has_more}}.
    for page in ("EventPage", "DeliveryPage"):
        props, required = schema_properties(openapi, {"$ref": f"#/components/schemas/{page}"})
        assert set(props) == set(required) == {"data", "meta"}
        meta, _ = schema_properties(openapi, props["meta"])
        assert {"data"} | set(meta) == {f.name for f in dataclasses.fields(__import__("posthorn").Page)}
