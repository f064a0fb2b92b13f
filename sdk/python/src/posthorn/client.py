"""`Client`: every operation of `/public/v1`, one attribute per resource."""

from __future__ import annotations

import datetime as _dt
import os
import urllib.parse
import uuid
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    TypedDict,
    TypeVar,
    Union,
)

from . import __version__
from .models import (
    Delivery,
    DeliveryDetail,
    Erasure,
    Event,
    EventAccepted,
    EventTypeSchema,
    Page,
    Replay,
    Webhook,
    decode,
)
from .retry import RetryPolicy
from .transport import Attempt, Transport

__all__ = ["Client", "ClientCertificateIn", "CursorIterator", "EventIn"]

T = TypeVar("T")
Since = Union[str, _dt.datetime, None]
DEFAULT_BASE_URL = "http://127.0.0.1:3000"
# `events.erase_data` may wait 40 s on the server for attempts in flight before answering.
ERASE_TIMEOUT = 60.0


class Client:
    """Posthorn's public API.

    >>> client = Client("phk_…", base_url="https://posthorn.example.com")
    >>> for event in client.events.iter(since="2026-11-01T00:00:00Z"):
    ...     print(event.id)

    Calls back off on 429 (honouring `Retry-After`), wait for the minute's reset when
    the quota is spent, and retry 5xx and connection errors for calls safe to repeat.
    """

    def __init__(
        self,
        api_key: str,
        base_url: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        max_wait: float = 120.0,
        rate_limit_threshold: int = 1,
        on_response: Optional[Callable[[Attempt], None]] = None,
    ) -> None:
        if not api_key:
            raise ValueError("api_key is required")
        base = (base_url or os.environ.get("POSTHORN_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if not base.endswith("/public/v1"):
            base += "/public/v1"
        self._transport = Transport(
            api_key,
            base,
            timeout=timeout,
            policy=RetryPolicy(max_retries, backoff_base, backoff_cap, max_wait, rate_limit_threshold),
            user_agent=f"posthorn-python/{__version__}",
            on_response=on_response,
        )
        self.webhooks = Webhooks(self._transport)
        self.events = Events(self._transport)
        self.deliveries = Deliveries(self._transport)
        self.replays = Replays(self._transport)
        self.erasures = Erasures(self._transport)
        self.event_types = EventTypes(self._transport)


def _path(*parts: Any) -> str:
    return "".join("/" + urllib.parse.quote(str(p), safe="") for p in parts)


def _since(value: Since, name: str = "since") -> Optional[str]:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise ValueError(f"{name} must be timezone-aware")
        return value.astimezone(_dt.timezone.utc).isoformat().replace("+00:00", "Z")
    return value


class ClientCertificateIn(TypedDict):
    """A client certificate for `webhooks.create`/`update`, presented to a receiver that
    asks for one (mutual TLS). Write-only: answers show `Webhook.client_certificate`."""

    #: PEM: the certificate first, then up to 4 of its chain (at most 16 KiB).
    cert: str
    #: PEM: its private key (at most 16 KiB).
    key: str


class Webhooks:
    """`/webhooks`: the project's endpoints."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(
        self,
        url: Optional[str],
        events: List[str],
        *,
        destination: Optional[Mapping[str, Any]] = None,
        description: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        rate_limit: Optional[int] = None,
        client_certificate: Optional[ClientCertificateIn] = None,
        signature_scheme: Optional[str] = None,
        filter: Optional[str] = None,
    ) -> Webhook:
        """Creates an endpoint; the answer carries its `secret`. Not retried on 5xx
        (a repeat could create a second endpoint). `rate_limit`: attempts per second at
        most (None: unlimited). `client_certificate`: `{"cert", "key"}` in PEM; one the
        server refuses (expired, key not its own, …) raises ApiError 422 `invalid`.
        `signature_scheme`: `hmac-sha256` (the default) or `ed25519`, whose deliveries
        carry v1a signatures checked with the answer's `public_key` (no secret).
        `filter`: a CEL expression over `event`, `data` and `subjects` (at most 1024
        bytes, e.g. `data.amount > 1000`); an event it does not match makes no attempt
        for this endpoint. One that does not parse or check raises ApiError 422
        `invalid`, its message saying where (`… at 1:14`). `destination`: instead of
        `url` (pass None), a broker to publish to, e.g. `{"type": "redis", "url":
        "redis://:pw@host:6379/0", "stream": "orders"}` or `{"type": "nats", "url":
        "nats://host:4222", "subject": "orders.paid"}`; its credentials are never returned."""
        body: Dict[str, Any] = {"events": list(events)}
        if url is not None:
            body["url"] = url
        if destination is not None:
            body["destination"] = dict(destination)
        if description is not None:
            body["description"] = description
        if rate_limit is not None:
            body["rate_limit"] = rate_limit
        if headers is not None:
            body["headers"] = dict(headers)
        if client_certificate is not None:
            body["client_certificate"] = dict(client_certificate)
        if signature_scheme is not None:
            body["signature_scheme"] = signature_scheme
        if filter is not None:
            body["filter"] = filter
        _, data = self._t.request("POST", "/webhooks", body=body, retry_safe=False)
        return decode(Webhook, data)

    def list(self) -> List[Webhook]:
        _, data = self._t.request("GET", "/webhooks", retry_safe=True)
        return [decode(Webhook, w) for w in data["data"]]

    def get(self, webhook_id: int) -> Webhook:
        _, data = self._t.request("GET", _path("webhooks", webhook_id), retry_safe=True)
        return decode(Webhook, data)

    def update(
        self,
        webhook_id: int,
        *,
        url: Optional[str] = None,
        events: Optional[List[str]] = None,
        description: Optional[str] = None,
        enabled: Optional[bool] = None,
        headers: Optional[Mapping[str, str]] = None,
        rate_limit: Optional[int] = None,
        unlimited: bool = False,
        client_certificate: Optional[ClientCertificateIn] = None,
        remove_client_certificate: bool = False,
        signature_scheme: Optional[str] = None,
        filter: Optional[str] = None,
        remove_filter: bool = False,
        destination: Optional[Mapping[str, Any]] = None,
    ) -> Webhook:
        """Changes the given fields only (`unlimited=True` lifts the rate limit;
        `client_certificate` replaces the certificate, `remove_client_certificate=True`
        drops it; `signature_scheme` switches schemes, both signing for 24 hours, and a
        switch to `hmac-sha256` answers the new `secret`; `filter` replaces the CEL
        filter, `remove_filter=True` drops it so every event of `events` is sent).
        `destination` gives a broker endpoint new settings of the same type (credentials
        left out are kept). Retried like a GET: it sets values, so a repeat leaves the
        same endpoint."""
        if client_certificate is not None and remove_client_certificate:
            raise ValueError("give client_certificate or remove_client_certificate, not both")
        if filter is not None and remove_filter:
            raise ValueError("give filter or remove_filter, not both")
        body: Dict[str, Any] = {
            k: v
            for k, v in {
                "url": url,
                "events": None if events is None else list(events),
                "description": description,
                "enabled": enabled,
                "headers": None if headers is None else dict(headers),
                "rate_limit": rate_limit,
                "client_certificate": None if client_certificate is None else dict(client_certificate),
                "signature_scheme": signature_scheme,
                "filter": filter,
                "destination": None if destination is None else dict(destination),
            }.items()
            if v is not None
        }
        if unlimited:
            body["rate_limit"] = None
        # The server reads null as "remove", absent as "leave as it is".
        if remove_client_certificate:
            body["client_certificate"] = None
        if remove_filter:
            body["filter"] = None
        _, data = self._t.request(
            "PATCH", _path("webhooks", webhook_id), body=body, retry_safe=True
        )
        return decode(Webhook, data)

    def delete(self, webhook_id: int) -> None:
        self._t.request("DELETE", _path("webhooks", webhook_id), retry_safe=True)

    def rotate_secret(self, webhook_id: int) -> Webhook:
        """A new secret; the old one stays valid for a while (deliveries carry both
        signatures). Not retried on 5xx: a repeat would rotate twice."""
        _, data = self._t.request(
            "POST", _path("webhooks", webhook_id, "rotate-secret"), retry_safe=False
        )
        return decode(Webhook, data)

    def recover(
        self,
        webhook_id: int,
        since: Union[str, _dt.datetime],
        until: Since = None,
    ) -> Replay:
        """Replays, once each, the endpoint's (event, endpoint) pairs still failing among
        the attempts made from `since` to `until` (default: now): failed or dead-lettered,
        with no success and nothing waiting. Times are RFC 3339 strings or aware
        datetimes. Answers the replay at once (it may be empty: `total` 0); follow it with
        `replays.get`. Not retried on 5xx: a repeat would start a second replay."""
        body: Dict[str, Any] = {"since": _since(since)}
        if until is not None:
            body["until"] = _since(until, "until")
        _, data = self._t.request(
            "POST", _path("webhooks", webhook_id, "recover"), body=body, retry_safe=False
        )
        return decode(Replay, data)


class _EventInRequired(TypedDict):
    event: str
    data: Dict[str, Any]


class EventIn(_EventInRequired, total=False):
    """One event of `events.send_batch`."""

    #: Its idempotency key (made up when absent).
    id: str
    ordering_key: str
    #: The data subjects it is about (`user:42`), at most 10 of 1 to 255 characters.
    subjects: List[str]


class Events:
    """`/events`: send events; read them back by id or by cursor; erase one's data."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def send(
        self,
        event: str,
        data: Any,
        *,
        idempotency_key: Optional[str] = None,
        ordering_key: Optional[str] = None,
        subjects: Optional[Sequence[str]] = None,
    ) -> EventAccepted:
        """Stores the event and fans it out to every subscribed endpoint.

        An idempotency key is made up when none is given, so a retry after a lost answer
        never sends the event twice; pass your own to de-duplicate across processes.
        Events with the same `ordering_key` reach each endpoint one at a time, in the
        order they were accepted. `subjects` name the data subjects the event is about
        (`user:42`; at most 10), so that `erasures.create(subject)` finds it.
        """
        key = idempotency_key or f"phk-{uuid.uuid4()}"
        body_out: Dict[str, Any] = {"event": event, "data": data}
        if ordering_key is not None:
            body_out["ordering_key"] = ordering_key
        if subjects is not None:
            body_out["subjects"] = list(subjects)
        _, body = self._t.request(
            "POST",
            "/events",
            body=body_out,
            headers={"Idempotency-Key": key},
            retry_safe=True,
        )
        return decode(EventAccepted, body)

    def send_batch(self, events: Sequence[EventIn]) -> List[EventAccepted]:
        """Stores up to 100 events in one request, all or none, fanned out in order; the
        answers are in the same order. Each costs one unit of the rate limit. Every item
        without an `id` gets a made-up idempotency key, so a retry after a lost answer
        never sends one twice."""
        items = [{**item, "id": item.get("id") or f"phk-{uuid.uuid4()}"} for item in events]
        _, body = self._t.request(
            "POST", "/events/batch", body={"events": items}, retry_safe=True
        )
        return [decode(EventAccepted, a) for a in body["data"]]

    def get(self, event_id: str) -> Event:
        _, data = self._t.request("GET", _path("events", event_id), retry_safe=True)
        return decode(Event, data)

    def erase_data(self, event_id: str) -> Optional[Erasure]:
        """Erases the event's data and subjects and its attempts' response bodies and
        headers; its waiting attempts become dead letters (`error_kind` `erased`).
        Answers None once done (also for an event erased before), or the `Erasure` still
        running if an attempt was in flight after the server's 40 s wait: it finishes
        when that attempt comes back (`erasures.get`). Retried like a GET: a repeat
        erases nothing more."""
        _, data = self._t.request(
            "DELETE",
            _path("events", event_id, "data"),
            retry_safe=True,
            timeout=max(self._t.timeout, ERASE_TIMEOUT),
        )
        return None if data is None else decode(Erasure, data)

    def list(
        self,
        *,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
        since: Since = None,
        type: Optional[str] = None,
    ) -> Page[Event]:
        """One page, oldest first."""
        query = {"cursor": cursor, "limit": limit, "since": _since(since), "type": type}
        return _page(self._t, "/events", query, Event)

    def iter(
        self,
        *,
        cursor: Optional[str] = None,
        since: Since = None,
        type: Optional[str] = None,
        page_size: int = 100,
    ) -> "CursorIterator[Event]":
        """Every event from `cursor` (or the beginning) on, each exactly once."""
        return CursorIterator(lambda c: self.list(cursor=c, limit=page_size, since=since, type=type), cursor)


class Deliveries:
    """`/deliveries`: every attempt; manual retry."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def list(
        self,
        *,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
        since: Since = None,
        status: Optional[str] = None,
        event_id: Optional[str] = None,
        ordering_key: Optional[str] = None,
    ) -> Page[Delivery]:
        query = {
            "cursor": cursor,
            "limit": limit,
            "since": _since(since),
            "status": status,
            "event_id": event_id,
            "ordering_key": ordering_key,
        }
        return _page(self._t, "/deliveries", query, Delivery)

    def iter(
        self,
        *,
        cursor: Optional[str] = None,
        since: Since = None,
        status: Optional[str] = None,
        event_id: Optional[str] = None,
        page_size: int = 100,
    ) -> "CursorIterator[Delivery]":
        return CursorIterator(
            lambda c: self.list(
                cursor=c, limit=page_size, since=since, status=status, event_id=event_id
            ),
            cursor,
        )

    def get(self, delivery_id: int) -> DeliveryDetail:
        _, data = self._t.request("GET", _path("deliveries", delivery_id), retry_safe=True)
        return decode(DeliveryDetail, data)

    def retry(self, delivery_id: int) -> Delivery:
        """Sends the event again as a new attempt. Not retried on 5xx: a repeat would
        queue a second attempt (or answer 409)."""
        _, data = self._t.request(
            "POST", _path("deliveries", delivery_id, "retry"), retry_safe=False
        )
        return decode(Delivery, data)


class Replays:
    """`/replays`: follow or cancel a replay started by `webhooks.recover`."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def get(self, replay_id: int) -> Replay:
        _, data = self._t.request("GET", _path("replays", replay_id), retry_safe=True)
        return decode(Replay, data)

    def cancel(self, replay_id: int) -> Replay:
        """Stops the replay (what it queued already stays queued) and answers it:
        `cancelled`, or unchanged if it had finished. Retried like a GET: a repeat
        leaves the same replay."""
        _, data = self._t.request(
            "POST", _path("replays", replay_id, "cancel"), retry_safe=True
        )
        return decode(Replay, data)


class Erasures:
    """`/erasures`: erase every event that names a data subject; follow an erasure."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(self, subject: str) -> Erasure:
        """Erases, in the background, every event of the project accepted until now whose
        `subjects` name `subject`, as `events.erase_data` does one; answers the erasure
        at once (`running`), which `get` follows until it is `done`. Counts against the
        project's `concurrent_erasures` (ApiError 422 `limit_reached`). Not retried on
        5xx: a repeat would start a second erasure."""
        _, data = self._t.request(
            "POST", "/erasures", body={"subject": subject}, retry_safe=False
        )
        return decode(Erasure, data)

    def get(self, erasure_id: int) -> Erasure:
        _, data = self._t.request("GET", _path("erasures", erasure_id), retry_safe=True)
        return decode(Erasure, data)


class EventTypes:
    """`/event-types/{type}/schema`: a JSON Schema per event type, which the `data` of its
    events must pass."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def set_schema(self, type: str, schema: Mapping[str, Any]) -> EventTypeSchema:
        """Sets (or replaces) the JSON Schema (draft 2020-12) that the `data` of every event
        of `type` sent from now on must pass: `events.send` and `send_batch` raise ApiError
        422 `invalid` for one that fails it, the message naming the path and the rule
        (`data.amount: 0 is less than the minimum of 1 (rule …)`; in a batch prefixed
        `events[1].`). Answers it with its `version` (1, then one more at every
        change). `$ref` resolves only within the schema (`#…`; a remote one is refused),
        `format` is asserted. Refused: ApiError 422 `invalid` for a schema the server does
        not accept (its message says where), 413 `too_large` over 64 KiB, 422
        `limit_reached` past 200 schemas per project. Retried like a GET: a repeat leaves
        the same schema (its version one more)."""
        _, data = self._t.request(
            "PUT", _path("event-types", type, "schema"), body=dict(schema), retry_safe=True
        )
        return decode(EventTypeSchema, data)

    def get_schema(self, type: str) -> Dict[str, Any]:
        """The schema as set; ApiError 404 `not_found` when the type has none."""
        _, data = self._t.request("GET", _path("event-types", type, "schema"), retry_safe=True)
        return data

    def delete_schema(self, type: str) -> None:
        """Removes the type's schema: its events are no longer checked. ApiError 404
        `not_found` when it has none."""
        self._t.request("DELETE", _path("event-types", type, "schema"), retry_safe=True)


def _page(t: Transport, path: str, query: Mapping[str, Any], cls: type) -> Page:
    _, body = t.request("GET", path, query=query, retry_safe=True)
    meta = body["meta"]
    return Page(
        data=[decode(cls, item) for item in body["data"]],
        has_more=bool(meta["has_more"]),
        next_cursor=meta["next_cursor"],
    )


class CursorIterator(Iterator[T]):
    """Items of every page in turn. `cursor` is where the pages read so far end: store
    it and pass it to `iter(cursor=…)` later to go on from there."""

    def __init__(self, fetch: Callable[[Optional[str]], Page[T]], cursor: Optional[str]) -> None:
        self._fetch = fetch
        self.cursor = cursor
        self._buffer: List[T] = []
        self._done = False

    def __iter__(self) -> "CursorIterator[T]":
        return self

    def __next__(self) -> T:
        while not self._buffer:
            if self._done:
                raise StopIteration
            page = self._fetch(self.cursor)
            self._buffer = list(page.data)
            self.cursor = page.next_cursor
            self._done = not page.has_more
        return self._buffer.pop(0)
