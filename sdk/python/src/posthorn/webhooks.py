"""Verifying a delivery: one call, both signature schemes, constant-time comparison.

Posthorn signs every attempt twice: Standard Webhooks (`webhook-id`, `webhook-timestamp`,
`webhook-signature: v1,<base64>`) and its own `X-Botix-Signature: sha256=<hex>` with
`X-Botix-Timestamp`. Either is enough; the Standard Webhooks one is checked when present.
An endpoint with the ed25519 scheme signs `v1a,<base64>` (Standard Webhooks only), checked
with its `whpk_` public key; that needs the optional `cryptography` package
(`pip install 'posthorn[ed25519]'`), imported only then.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Callable, Iterable, Mapping, Optional, Tuple, Union

__all__ = [
    "verify",
    "sign",
    "WebhookVerificationError",
    "InvalidSignatureError",
    "InvalidTimestampError",
    "MissingHeadersError",
]

DEFAULT_TOLERANCE = 300
_PUBLIC_KEY_PREFIX = "whpk_"
_ED25519_KEY_LENGTH = 32
_ED25519_SIGNATURE_LENGTH = 64
# Bounds on what a sender controls: a rotation sends two signatures; more is abuse.
_MAX_SIGNATURES = 16
_MAX_HEADER_LENGTH = 4096


class WebhookVerificationError(Exception):
    """The delivery cannot be trusted; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class InvalidSignatureError(WebhookVerificationError):
    """No signature in the headers matches the body and the secret."""


class InvalidTimestampError(WebhookVerificationError):
    """The timestamp is not a number, or further than the tolerance from now."""


class MissingHeadersError(WebhookVerificationError):
    """Neither scheme's headers are all present."""


HeadersLike = Union[Mapping[str, Any], Iterable[Tuple[str, Any]]]


def verify(
    payload: Union[bytes, bytearray, str],
    headers: HeadersLike,
    secret: str,
    tolerance: int = DEFAULT_TOLERANCE,
    *,
    now: Optional[float] = None,
) -> Any:
    """Checks a delivery and returns its parsed JSON body.

    `payload` is the raw request body exactly as received (never re-serialised JSON);
    `headers` any mapping or list of pairs (Flask's, Django's, Starlette's headers work),
    names matched case-insensitively; `secret` the endpoint's `whsec_…` secret, or the
    `whpk_…` public key of an endpoint with the ed25519 scheme (then only `v1a` signatures
    count, and the `cryptography` package is needed: `pip install 'posthorn[ed25519]'`).
    Raises a subclass of `WebhookVerificationError` when the delivery is not genuine.
    """
    body = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    # A bad or unusable public key is a setup mistake: raised whatever the headers are.
    is_public_key = isinstance(secret, str) and secret.startswith(_PUBLIC_KEY_PREFIX)
    check_v1a = _ed25519_verifier(secret) if is_public_key else None
    h = _lower_headers(headers)
    now = time.time() if now is None else now
    standard = ("webhook-id", "webhook-timestamp", "webhook-signature")
    botix = ("x-botix-signature", "x-botix-timestamp")
    # X-Botix signatures are HMACs only: a public key cannot check them.
    schemes = (standard,) if check_v1a else (standard, botix)
    if all(h.get(name) for name in standard):
        msg_id, stamp, header = (_header(h, name) for name in standard)
        _check_timestamp(stamp, now, tolerance)
        content = f"{msg_id}.{stamp}.".encode() + body
        if check_v1a:
            # Nothing secret is involved, so stopping at the first match leaks nothing.
            signatures = _standard_signatures(header, "v1a", _ED25519_SIGNATURE_LENGTH)
            matched = any(check_v1a(sig, content) for sig in signatures)
        else:
            matched = _any_equal(_standard_signatures(header), _hmac(_standard_key(secret), content))
    elif not check_v1a and all(h.get(name) for name in botix):
        header, stamp = (_header(h, name) for name in botix)
        _check_timestamp(stamp, now, tolerance)
        expected = _hmac(secret.encode("utf-8"), f"{stamp}.".encode() + body)
        matched = _any_equal(_botix_signatures(header), expected)
    else:
        # Name what is missing from the scheme the sender started on, else from both.
        started = [s for s in schemes if any(h.get(n) for n in s)] or list(schemes)
        missing = [n for s in started for n in s if not h.get(n)]
        raise MissingHeadersError("missing header " + ", ".join(missing))
    if not matched:
        kind = "public key" if check_v1a else "secret"
        raise InvalidSignatureError(f"no signature matches the body and the {kind}")
    try:
        return json.loads(body)
    except ValueError as e:
        raise WebhookVerificationError(f"the body is not JSON: {e}") from None


def sign(secret: str, msg_id: str, timestamp: int, payload: Union[bytes, str]) -> dict:
    """The headers Posthorn would send for `payload`: for tests of your receiver."""
    body = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    standard = _hmac(_standard_key(secret), f"{msg_id}.{timestamp}.".encode() + body)
    botix = _hmac(secret.encode("utf-8"), f"{timestamp}.".encode() + body)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": "v1," + base64.b64encode(standard).decode(),
        "X-Botix-Signature": "sha256=" + botix.hex(),
        "X-Botix-Timestamp": str(timestamp),
    }


def _lower_headers(headers: HeadersLike) -> dict:
    items = headers.items() if hasattr(headers, "items") else headers
    out: dict = {}
    for name, value in items:
        if isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, bytes):
            value = value.decode("latin-1")
        value = str(value).strip()
        if value:
            out[str(name).lower()] = value
    return out


def _header(h: dict, name: str) -> str:
    value = h[name].strip()
    if len(value) > _MAX_HEADER_LENGTH:
        raise WebhookVerificationError(f"header {name} is too long")
    return value


def _check_timestamp(stamp: str, now: float, tolerance: int) -> None:
    if not stamp.isdigit() or len(stamp) > 12:
        raise InvalidTimestampError(f"timestamp `{stamp[:20]}` is not Unix seconds")
    age = now - int(stamp)
    if age > tolerance:
        raise InvalidTimestampError(
            f"timestamp is {int(age)} s old, more than the tolerance of {tolerance} s"
        )
    if -age > tolerance:
        raise InvalidTimestampError(
            f"timestamp is {int(-age)} s in the future, more than the tolerance of {tolerance} s"
        )


def _standard_key(secret: str) -> bytes:
    raw = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the secret is not a whsec_ secret (base64 after the prefix)") from None


def _ed25519_verifier(key: str) -> Callable[[bytes, bytes], bool]:
    """Parses a `whpk_` key; the result tells whether a signature is the key's over a message."""
    try:
        raw = base64.b64decode(key[len(_PUBLIC_KEY_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != _ED25519_KEY_LENGTH:
        raise ValueError(
            "the key is not a whpk_ public key (base64 of 32 bytes after the prefix)"
        )
    try:
        # Imported here: HMAC verification must work without the optional package.
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        raise ImportError(
            "verifying v1a (ed25519) signatures with a whpk_ key needs the cryptography "
            "package: pip install 'posthorn[ed25519]' (or pip install cryptography)"
        ) from None
    public = Ed25519PublicKey.from_public_bytes(raw)

    def check(signature: bytes, message: bytes) -> bool:
        try:
            public.verify(signature, message)
        except InvalidSignature:
            return False
        return True

    return check


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def _any_equal(candidates: list, expected: bytes) -> bool:
    # Every candidate is compared, so the time taken does not tell which one was close.
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(candidate, expected)
    return matched


def _standard_signatures(header: str, version: str = "v1", length: Optional[int] = None) -> list:
    """`<version>,<base64>` entries separated by spaces; other versions, and signatures of
    another `length` when one is given, are skipped."""
    out = []
    for entry in header.split()[:_MAX_SIGNATURES]:
        found, _, sig = entry.partition(",")
        if found != version:
            continue
        try:
            decoded = base64.b64decode(sig, validate=True)
        except (binascii.Error, ValueError):
            continue
        if length is None or len(decoded) == length:
            out.append(decoded)
    return out


def _botix_signatures(header: str) -> list:
    """`sha256=<hex>` entries separated by commas (two while a rotated secret is valid)."""
    out = []
    for entry in header.split(",")[:_MAX_SIGNATURES]:
        scheme, _, sig = entry.strip().partition("=")
        if scheme != "sha256":
            continue
        try:
            out.append(bytes.fromhex(sig))
        except ValueError:
            continue
    return out
