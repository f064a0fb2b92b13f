"""`Operator`: every operation of `/operator/v1`, the API of the platform that runs
Posthorn for its customers: their projects, the projects' API keys, usage and portal links.

    from posthorn import Operator
    op = Operator("pho_…", base_url="https://posthorn.example.com")
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TypedDict, Union

from . import __version__
from .client import DEFAULT_BASE_URL, CursorIterator, _path
from .models import Page, decode
from .retry import RetryPolicy
from .transport import Attempt, Transport

__all__ = [
    "Operator",
    "Projects",
    "ApiKeys",
    "UsageReports",
    "PortalLinks",
    "Project",
    "EffectiveLimits",
    "Brand",
    "CreatedKey",
    "Usage",
    "UsageDay",
    "AttemptCounts",
    "PortalLink",
    "LimitOverrides",
    "BrandIn",
]

Day = Union[str, _dt.date, None]


# --- models: the answers, checked against /operator/v1/openapi.json by the test suite ---


@dataclasses.dataclass(frozen=True)
class EffectiveLimits:
    """Every limit's value for the project: the default, the plan's or the override."""

    endpoints: int
    api_keys: int
    members: int
    event_types_per_endpoint: int
    concurrent_replays: int
    data_depth: int
    concurrent_erasures: int
    api_requests_per_minute: int
    retention_days: int


@dataclasses.dataclass(frozen=True)
class Brand:
    """What the portal shows instead of Posthorn's look; None: not set."""

    name: Optional[str] = None
    accent: Optional[str] = None
    logo_url: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Project:
    """One of the operator's customers."""

    id: int
    name: str
    plan: str
    limits: EffectiveLimits
    #: Origins that may frame this project's portal pages.
    frame_ancestors: List[str]
    brand: Brand
    #: Attempts carry W3C trace context (`traceparent`) to the project's receivers.
    trace_propagation: bool
    created_at: _dt.datetime
    #: The operator's own id for this customer.
    uid: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class CreatedKey:
    """A project's new public API key. `key` is shown this once (stored hashed)."""

    id: int
    name: str
    prefix: str
    key: str
    created_at: _dt.datetime


@dataclasses.dataclass(frozen=True)
class AttemptCounts:
    succeeded: int
    failed: int
    dead_letter: int


@dataclasses.dataclass(frozen=True)
class UsageDay:
    day: _dt.date
    events: int
    attempts: AttemptCounts


@dataclasses.dataclass(frozen=True)
class Usage:
    """What a project used from `since` to `until` (UTC days, both included)."""

    project_id: int
    since: _dt.date
    until: _dt.date
    #: Events accepted in the window.
    events: int
    #: Attempts finished in the window, by how they ended.
    attempts: AttemptCounts
    #: The days that saw any use, oldest first.
    days: List[UsageDay]


@dataclasses.dataclass(frozen=True)
class PortalLink:
    """Single-use: opening `url` signs the browser into the project's portal."""

    url: str
    expires_at: _dt.datetime


# --- what the calls take besides plain values ---------------------------------------


class LimitOverrides(TypedDict, total=False):
    """The operator's overrides of a project's limits, each from 1 to its ceiling."""

    endpoints: int
    api_keys: int
    members: int
    event_types_per_endpoint: int
    concurrent_replays: int
    data_depth: int
    #: Erasures by subject running at once (1 to 100).
    concurrent_erasures: int
    #: Public API requests per key per minute, instead of the plan's.
    api_requests_per_minute: int
    #: Days of delivery history kept, at most the server's POSTHORN_RETENTION_DAYS.
    retention_days: int


class BrandIn(TypedDict, total=False):
    #: The name the portal shows instead of the project's.
    name: str
    #: The portal's accent colour, `#rrggbb`.
    accent: str
    #: An https image the portal shows in its header.
    logo_url: str


# --- the client -----------------------------------------------------------------------


class Operator:
    """Posthorn's operator API, authenticated by an operator key (`pho_…`, made by
    `posthorn create-operator-key`).

    >>> op = Operator("pho_…", base_url="https://posthorn.example.com")
    >>> project = op.projects.create("Acme", uid="customer-42", plan="business")
    >>> key = op.api_keys.create(project.id, "production")
    >>> Client(key.key, base_url="https://posthorn.example.com").events.send(...)

    Retries as `Client` does: 429s wait out `Retry-After`; 5xx and connection errors are
    retried only for calls safe to repeat (GET, PATCH, DELETE).
    """

    def __init__(
        self,
        operator_key: str,
        base_url: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        max_wait: float = 120.0,
        on_response: Optional[Callable[[Attempt], None]] = None,
    ) -> None:
        if not operator_key:
            raise ValueError("operator_key is required")
        base = (base_url or os.environ.get("POSTHORN_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if not base.endswith("/operator/v1"):
            base += "/operator/v1"
        self._transport = Transport(
            operator_key,
            base,
            timeout=timeout,
            policy=RetryPolicy(max_retries, backoff_base, backoff_cap, max_wait, 1),
            user_agent=f"posthorn-python/{__version__}",
            on_response=on_response,
        )
        self.projects = Projects(self._transport)
        self.api_keys = ApiKeys(self._transport)
        self.usage = UsageReports(self._transport)
        self.portal_links = PortalLinks(self._transport)


def _day(value: Day) -> Optional[str]:
    """A UTC day as `YYYY-MM-DD`: a string as given, a date, or an aware datetime's day."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise ValueError("a datetime for a day must be timezone-aware")
        return value.astimezone(_dt.timezone.utc).date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    return value


def _project_body(
    name: Optional[str],
    uid: Optional[str],
    plan: Optional[str],
    limits: Optional[Mapping[str, Any]],
    frame_ancestors: Optional[Sequence[str]],
    brand: Optional[Mapping[str, Any]],
    trace_propagation: Optional[bool] = None,
) -> Dict[str, Any]:
    body = {
        "name": name,
        "uid": uid,
        "plan": plan,
        "limits": None if limits is None else dict(limits),
        "frame_ancestors": None if frame_ancestors is None else list(frame_ancestors),
        "brand": None if brand is None else dict(brand),
        "trace_propagation": trace_propagation,
    }
    return {k: v for k, v in body.items() if v is not None}


class Projects:
    """`/projects`: the operator's customers, one project each."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(
        self,
        name: str,
        *,
        uid: Optional[str] = None,
        plan: Optional[str] = None,
        limits: Optional[LimitOverrides] = None,
        frame_ancestors: Optional[Sequence[str]] = None,
        brand: Optional[BrandIn] = None,
        trace_propagation: Optional[bool] = None,
    ) -> Project:
        """Creates a project. `uid` is the operator's own id for the customer, unique among
        live projects (a second one raises ApiError 409 `conflict`); `plan` is `trial`
        (the default) or `business`; `frame_ancestors` are the origins that may frame its
        portal (`https://host[:port]`). Not retried on 5xx: a repeat could create two."""
        body = _project_body(name, uid, plan, limits, frame_ancestors, brand, trace_propagation)
        _, data = self._t.request("POST", "/projects", body=body, retry_safe=False)
        return decode(Project, data)

    def list(
        self,
        *,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
        uid: Optional[str] = None,
    ) -> Page[Project]:
        """One page of live projects, oldest first (`limit` 1 to 200, default 50)."""
        _, body = self._t.request(
            "GET", "/projects", query={"cursor": cursor, "limit": limit, "uid": uid}, retry_safe=True
        )
        return Page(
            data=[decode(Project, p) for p in body["data"]],
            has_more=bool(body["has_more"]),
            next_cursor=body["next_cursor"],
        )

    def iter(
        self, *, cursor: Optional[str] = None, uid: Optional[str] = None, page_size: int = 100
    ) -> "CursorIterator[Project]":
        """Every live project from `cursor` (or the beginning) on, each exactly once."""
        return CursorIterator(lambda c: self.list(cursor=c, limit=page_size, uid=uid), cursor)

    def find(self, uid: str) -> Optional[Project]:
        """The live project that carries the operator's id `uid`, or None."""
        page = self.list(uid=uid, limit=1)
        return page.data[0] if page.data else None

    def get(self, project_id: int) -> Project:
        _, data = self._t.request("GET", _path("projects", project_id), retry_safe=True)
        return decode(Project, data)

    def update(
        self,
        project_id: int,
        *,
        name: Optional[str] = None,
        uid: Optional[str] = None,
        plan: Optional[str] = None,
        limits: Optional[LimitOverrides] = None,
        frame_ancestors: Optional[Sequence[str]] = None,
        brand: Optional[BrandIn] = None,
        trace_propagation: Optional[bool] = None,
    ) -> Project:
        """Changes the given fields only; `limits`, `frame_ancestors` and `brand` each
        replace the old value whole (`frame_ancestors=[]` lets no site frame the portal).
        Retried like a GET: it sets values, so a repeat leaves the same project."""
        body = _project_body(name, uid, plan, limits, frame_ancestors, brand, trace_propagation)
        _, data = self._t.request(
            "PATCH", _path("projects", project_id), body=body, retry_safe=True
        )
        return decode(Project, data)

    def delete(self, project_id: int) -> None:
        """The project is gone at once: its id answers 404, its keys and portal sessions
        stop working, nothing more is sent for it; its data is purged in the background."""
        self._t.request("DELETE", _path("projects", project_id), retry_safe=True)


class ApiKeys:
    """`/projects/{id}/api-keys`: the projects' public API keys."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(self, project_id: int, name: str) -> CreatedKey:
        """Mints a public API key (`phk_…`) for the project; `key` is shown this once.
        Not retried on 5xx: a repeat would mint a second key."""
        _, data = self._t.request(
            "POST", _path("projects", project_id, "api-keys"), body={"name": name},
            retry_safe=False,
        )
        return decode(CreatedKey, data)

    def revoke(self, project_id: int, key_id: int) -> None:
        """The key stops working at once (the public API answers it 401)."""
        self._t.request(
            "DELETE", _path("projects", project_id, "api-keys", key_id), retry_safe=True
        )


class UsageReports:
    """`/projects/{id}/usage`: what a project used per UTC day, for billing."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def get(self, project_id: int, *, since: Day = None, until: Day = None) -> Usage:
        """Usage from `since` to `until`, both UTC days included (`YYYY-MM-DD` strings,
        dates, or aware datetimes). Defaults: `until` today, `since` 29 days before it;
        at most 400 days are counted."""
        _, data = self._t.request(
            "GET",
            _path("projects", project_id, "usage"),
            query={"since": _day(since), "until": _day(until)},
            retry_safe=True,
        )
        return decode(Usage, data)


class PortalLinks:
    """`/projects/{id}/portal-links`: single-use sign-in links into a project's portal."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(
        self,
        project_id: int,
        user_id: str,
        role: str,
        *,
        email: Optional[str] = None,
        name: Optional[str] = None,
        expires_in: Optional[int] = None,
    ) -> PortalLink:
        """A link that signs one of the operator's users (`user_id`, with their `email`
        and `name` if given) into the project's portal as `owner`, `member` or `viewer`.
        `expires_in`: seconds, 1 to 3600 (default 300). Not retried on 5xx."""
        user: Dict[str, str] = {"id": user_id}
        if email is not None:
            user["email"] = email
        if name is not None:
            user["name"] = name
        body: Dict[str, Any] = {"user": user, "role": role}
        if expires_in is not None:
            body["expires_in"] = expires_in
        _, data = self._t.request(
            "POST", _path("projects", project_id, "portal-links"), body=body, retry_safe=False
        )
        return decode(PortalLink, data)
