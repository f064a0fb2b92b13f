"""When to try a request again and how long to wait: pure functions, no I/O.

Shared by all Posthorn client libraries: on 429 wait the larger of `Retry-After` and an
exponential backoff with jitter; on 5xx and connection errors retry only requests that
are safe to repeat; never retry other 4xx; wait for the minute's reset ahead of time
when `X-RateLimit-Remaining` runs low.
"""

from __future__ import annotations

import dataclasses
import email.utils
import random
from typing import Callable, Optional

__all__ = ["RetryPolicy", "backoff", "parse_retry_after"]


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    #: Retries after the first attempt (so at most `max_retries + 1` requests).
    max_retries: int = 5
    #: First backoff step, seconds; doubles with each retry up to `backoff_cap`.
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    #: Longest single wait the client accepts; a longer `Retry-After` raises instead.
    max_wait: float = 120.0
    #: Wait for `X-RateLimit-Reset` once `X-RateLimit-Remaining` falls below this
    #: (1: only when the minute's quota is spent; 0: never wait ahead of time).
    rate_limit_threshold: int = 1


def backoff(
    retry: int, policy: RetryPolicy, rand: Callable[[], float] = random.random
) -> float:
    """Seconds before retry number `retry` (0-based): half the capped exponential step
    fixed, half random ("equal jitter"), so clients spread out but never hammer."""
    step = min(policy.backoff_cap, policy.backoff_base * (2 ** min(retry, 32)))
    return step / 2 + rand() * step / 2


def parse_retry_after(value: Optional[str], now: float) -> Optional[float]:
    """`Retry-After` as seconds from `now`: delta-seconds or an HTTP-date; None if absent
    or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(min(int(value), 10**9))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def retry_wait(status: Optional[int], retry: int, retry_after: Optional[float],
               policy: RetryPolicy, rand: Callable[[], float] = random.random) -> float:
    """The wait before retrying after a 429: the larger of Retry-After and the backoff.
    Other statuses and connection errors (`status` None) wait the backoff."""
    wait = backoff(retry, policy, rand)
    if status == 429 and retry_after is not None:
        wait = max(wait, retry_after)
    return wait
