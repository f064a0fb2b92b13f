"""One HTTP exchange with the API, repeated as `retry.py` decides (urllib, no dependencies)."""

from __future__ import annotations

import dataclasses
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .errors import ApiConnectionError, ApiError, RateLimitError
from .retry import RetryPolicy, backoff, parse_retry_after, retry_wait

# A list page of 200 deliveries is far below this; anything larger is not the API.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
# Sent a little after the reset second so the server's clock has surely moved on.
_RESET_MARGIN = 0.05


@dataclasses.dataclass(frozen=True)
class Attempt:
    """What `on_response` hooks receive after every HTTP attempt."""

    method: str
    path: str
    #: 0 for the first try of a call, then 1, 2, …
    retry: int
    #: Wall-clock time (time.time()) just before the request was sent.
    sent_at: float
    #: Wall-clock time when the answer (or the error) came.
    received_at: float
    #: The HTTP status, or None when no answer came (connection error, timeout).
    status: Optional[int]
    headers: Mapping[str, str]


class Transport:
    def __init__(
        self,
        api_key: str,
        base_url: str,
        *,
        timeout: float,
        policy: RetryPolicy,
        user_agent: str,
        on_response: Optional[Callable[[Attempt], None]] = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api_key = api_key
        self.base_url = base_url
        self.timeout = timeout
        self.policy = policy
        self.user_agent = user_agent
        self.on_response = on_response
        self.sleep = sleep
        self.clock = clock
        # The last rate-limit headers seen; shared by every thread using this client.
        self._lock = threading.Lock()
        self._remaining: Optional[int] = None
        self._reset: Optional[float] = None

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
        retry_safe: bool,
        timeout: Optional[float] = None,
    ) -> Tuple[int, Any]:
        url = self.base_url + path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = None if body is None else json.dumps(body).encode("utf-8")
        all_headers = {
            "Authorization": f"Bearer {self.api_key}",
            "Accept": "application/json",
            "User-Agent": self.user_agent,
            **(headers or {}),
        }
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        retry = 0
        while True:
            self._wait_for_quota()
            sent_at = self.clock()
            try:
                status, resp_headers, raw = self._send(
                    method, url, data, all_headers, timeout or self.timeout
                )
            except (OSError, http.client.HTTPException) as e:
                self._log(method, path, retry, sent_at, None, {})
                if retry_safe and retry < self.policy.max_retries:
                    self.sleep(backoff(retry, self.policy))
                    retry += 1
                    continue
                raise ApiConnectionError(f"{method} {path}: {e}") from e
            self._note_quota(resp_headers)
            self._log(method, path, retry, sent_at, status, resp_headers)
            if 200 <= status < 300:
                return status, _json_or_none(raw)
            code, message = _error_of(status, raw)
            if status == 429:
                after = parse_retry_after(resp_headers.get("retry-after"), self.clock())
                wait = retry_wait(429, retry, after, self.policy)
                if retry >= self.policy.max_retries or wait > self.policy.max_wait:
                    raise RateLimitError(status, code, message, resp_headers, after)
                self.sleep(wait)
                retry += 1
                continue
            if status >= 500 and retry_safe and retry < self.policy.max_retries:
                self.sleep(backoff(retry, self.policy))
                retry += 1
                continue
            raise ApiError(status, code, message, resp_headers)

    def _send(
        self, method: str, url: str, data: Optional[bytes], headers: Dict[str, str], timeout: float
    ) -> Tuple[int, Dict[str, str], bytes]:
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, _lower(resp.headers), _read(resp)
        except urllib.error.HTTPError as e:  # 4xx and 5xx come as exceptions
            with e:
                return e.code, _lower(e.headers), _read(e)
        except socket.timeout as e:
            raise OSError(f"timed out after {timeout} s") from e

    def _wait_for_quota(self) -> None:
        """Proactive: with the quota (nearly) spent, sleep until the minute resets."""
        with self._lock:
            low = (
                self._remaining is not None
                and self._reset is not None
                and self._remaining < self.policy.rate_limit_threshold
            )
            wait = (self._reset - self.clock() + _RESET_MARGIN) if low else 0.0
        if wait > 0:
            self.sleep(min(wait, self.policy.max_wait))

    def _note_quota(self, headers: Mapping[str, str]) -> None:
        try:
            remaining = int(headers["x-ratelimit-remaining"])
            reset = float(headers["x-ratelimit-reset"])
        except (KeyError, ValueError):
            return
        with self._lock:
            self._remaining, self._reset = remaining, reset

    def _log(self, method, path, retry, sent_at, status, headers) -> None:
        if self.on_response is not None:
            attempt = Attempt(method, path, retry, sent_at, self.clock(), status, dict(headers))
            self.on_response(attempt)


def _lower(headers: Any) -> Dict[str, str]:
    return {k.lower(): v for k, v in headers.items()} if headers is not None else {}


def _read(resp: Any) -> bytes:
    raw = resp.read(MAX_RESPONSE_BYTES + 1)
    if len(raw) > MAX_RESPONSE_BYTES:
        raise http.client.HTTPException(f"response over {MAX_RESPONSE_BYTES} bytes")
    return raw


def _json_or_none(raw: bytes) -> Any:
    return json.loads(raw) if raw.strip() else None


def _error_of(status: int, raw: bytes) -> Tuple[str, str]:
    """The API's `{"error": {"code", "message"}}`, or something readable from a proxy."""
    try:
        err = json.loads(raw)["error"]
        return str(err["code"]), str(err["message"])
    except (ValueError, KeyError, TypeError):
        text = raw[:200].decode("utf-8", "replace").strip()
        return "http_" + str(status), text or http.client.responses.get(status, "error")
