"""Errors of the API client. Verification errors live in `posthorn.webhooks`."""

from __future__ import annotations

from typing import Mapping, Optional

__all__ = ["PosthornError", "ApiError", "RateLimitError", "ApiConnectionError"]


class PosthornError(Exception):
    """Base of every error the API client raises."""


class ApiError(PosthornError):
    """The API answered with an error: `{"error": {"code", "message"}}` and its status."""

    def __init__(
        self, status: int, code: str, message: str, headers: Optional[Mapping[str, str]] = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


class RateLimitError(ApiError):
    """A 429 the client gave up on (retries spent, or a wait longer than `max_wait`)."""

    def __init__(self, status, code, message, headers=None, retry_after: Optional[float] = None):
        super().__init__(status, code, message, headers)
        self.retry_after = retry_after


class ApiConnectionError(PosthornError):
    """No answer: connection refused or reset, DNS failure, or timeout."""
