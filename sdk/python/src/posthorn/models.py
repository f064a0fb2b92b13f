"""Typed models of the public API's answers; field names are the JSON names.

Each model is checked against `/public/v1/openapi.json` by the test suite. Fields the
server adds later are ignored, so an older client keeps working.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
import sys
import typing
from typing import Any, Dict, Generic, List, Optional, Tuple, TypeVar

__all__ = [
    "Webhook",
    "ClientCertificate",
    "Destination",
    "EventAccepted",
    "Event",
    "FilteredOut",
    "Delivery",
    "DeliveryDetail",
    "Replay",
    "Erasure",
    "EventTypeSchema",
    "Page",
    "parse_time",
]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Destination:
    """Where an endpoint that is no plain URL sends: `listen`, a `posthorn listen`
    session's (its deliveries go to the CLI's machine), or a broker it publishes to
    (`redis`, `nats`, `mqtt`, `rabbitmq`), with its settings; its credentials are never returned."""

    type: str
    name: Optional[str] = None  # listen: the session's `--name`; None: it ends when its CLI exits
    connected: bool = False  # listen: its CLI is connected now
    url: Optional[str] = None  # a broker's URL, without credentials
    stream: Optional[str] = None  # redis: the stream appended to
    maxlen: Optional[int] = None  # redis: the stream's approximate length bound
    subject: Optional[str] = None  # nats: the JetStream subject published to
    exchange: Optional[str] = None  # rabbitmq: the exchange ("": the default exchange)
    routing_key: Optional[str] = None  # rabbitmq: the routing key
    topic: Optional[str] = None  # mqtt: the topic published to
    qos: Optional[int] = None  # mqtt: 0 or 1
    credentials_set: bool = False  # a broker: it has credentials (sealed, never shown)


@dataclasses.dataclass(frozen=True)
class ClientCertificate:
    """What is shown of an endpoint's client certificate (its PEM and key never are)."""

    subject: str  # e.g. `CN=posthorn-client, O=Shop`
    not_after: _dt.datetime


@dataclasses.dataclass(frozen=True)
class Webhook:
    """An endpoint. `secret` is only set in the answers to create and rotate_secret of an
    HMAC endpoint, and to an update that switches to `hmac-sha256`."""

    id: int
    url: str
    events: List[str]
    description: str
    enabled: bool
    created_at: _dt.datetime
    headers: List[str]
    rate_limit: Optional[int] = None  # attempts per second at most; None: unlimited
    # Presented to the receiver when it asks for one (mutual TLS); None: none.
    client_certificate: Optional[ClientCertificate] = None
    # `hmac-sha256` (signed with the secret) or `ed25519` (v1a, checked with `public_key`).
    signature_scheme: str = "hmac-sha256"
    public_key: Optional[str] = None  # `whpk_…`, once the endpoint has an ed25519 key
    # The CEL filter events must match to be sent here; None: every event of `events`.
    filter: Optional[str] = None
    secret: Optional[str] = None
    # Only for an endpoint that is no plain URL (a `posthorn listen` session's).
    destination: Optional[Destination] = None


@dataclasses.dataclass(frozen=True)
class EventAccepted:
    id: str
    deliveries: int


@dataclasses.dataclass(frozen=True)
class FilteredOut:
    """An endpoint subscribed to an event's type that its filter kept the event from."""

    endpoint_id: int
    reason: str  # e.g. `the filter was false`, or why the filter failed on this event


@dataclasses.dataclass(frozen=True)
class Event:
    id: str
    event: str
    deliveries: int
    created_at: _dt.datetime
    data: Optional[Dict[str, Any]] = None  # None once erased
    ordering_key: Optional[str] = None
    subjects: List[str] = dataclasses.field(default_factory=list)  # [] once erased
    # When its data was erased, and by which erasure; None while it is kept.
    erased_at: Optional[_dt.datetime] = None
    erasure_id: Optional[int] = None
    # The endpoints subscribed to its type whose filters it did not pass, and why: they
    # had no attempt (`deliveries` counts only the others). [] when none.
    filtered_out: List[FilteredOut] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Delivery:
    """One delivery attempt."""

    id: int
    request_id: str
    event_id: str
    event_type: str
    endpoint_id: int
    target_url: str
    attempt: int
    trigger: str
    triggered_by: Optional[str]
    status: str
    scheduled_at: _dt.datetime
    started_at: Optional[_dt.datetime]
    created_at: _dt.datetime
    finished_at: Optional[_dt.datetime]
    duration_ms: Optional[int]
    response_status: Optional[int]
    error_kind: Optional[str]
    error: Optional[str]
    ordering_key: Optional[str] = None
    # While the attempt waits behind an earlier event with the same key: that event's id.
    waits_for: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class DeliveryDetail(Delivery):
    """An attempt with the exact body sent and the headers both ways."""

    payload: str = ""
    request_headers: Optional[List[Tuple[str, str]]] = None
    response_headers: Optional[List[Tuple[str, str]]] = None
    response_body: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Replay:
    """A replay (as `webhooks.recover` starts it) and how far it has come."""

    id: int
    status: str  # running, done or cancelled
    total: int  # the (event, endpoint) pairs it sends, one new attempt each
    queued: int  # attempts queued so far
    finished: int  # of those, attempts with an outcome
    per_second: int  # attempts queued per second, per endpoint


@dataclasses.dataclass(frozen=True)
class Erasure:
    """An erasure (by subject, or of one event) and what it has erased so far."""

    id: int
    status: str  # running, then done once no attempt of its events is in flight
    subject: Optional[str]  # None for the erasure of one event
    event_id: Optional[str]  # None for an erasure by subject
    created_at: _dt.datetime
    finished_at: Optional[_dt.datetime]
    events: int  # events whose data, subjects and attempts' responses were erased
    attempts: int  # attempts of those events
    dead_lettered: int  # waiting attempts ended as dead letters (error_kind "erased")
    inspector_copies: int  # Redirect copies in inspector bins whose bodies were erased


@dataclasses.dataclass(frozen=True)
class EventTypeSchema:
    """An event type's JSON Schema (draft 2020-12) as set: while it is set, `events.send`
    and `send_batch` refuse events of the type whose `data` fails it."""

    event: str  # the event type, e.g. `order.paid`
    version: int  # 1 when first set, one more at every change
    updated_at: _dt.datetime
    schema: Dict[str, Any]  # the schema as sent


@dataclasses.dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: resume from `next_cursor`; fetch again now only if `has_more`."""

    data: List[T]
    has_more: bool
    next_cursor: str


_FRACTION = re.compile(r"\.(\d+)")


def parse_time(value: str) -> _dt.datetime:
    """RFC 3339 as the API writes it (`2026-11-30T12:00:00.123456Z`), on any Python 3.8+."""
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    # fromisoformat before 3.11 takes exactly 3 or 6 fraction digits.
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    return _dt.datetime.fromisoformat(text)


def decode(cls: type, obj: Dict[str, Any]) -> Any:
    """Builds a model from its JSON object by the model's own type hints."""
    if not isinstance(obj, dict):
        raise TypeError(f"{cls.__name__}: expected a JSON object, got {type(obj).__name__}")
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in obj:
            values[field.name] = _convert(hints[field.name], obj[field.name])
    return cls(**values)


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value) if len(inner) == 1 else value
    if hint is _dt.datetime:
        return parse_time(value)
    if hint is _dt.date:
        return _dt.date.fromisoformat(value)
    if dataclasses.is_dataclass(hint):
        return decode(hint, value)
    if origin in (list, List):
        return [_convert(args[0], v) for v in value] if args else list(value)
    if origin in (tuple, Tuple):
        return tuple(value)
    return value
