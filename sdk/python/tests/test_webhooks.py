"""verify(): the SPEC.md test vectors, every error, and the standardwebhooks package."""

import base64
import datetime as dt
import json
import os
import time

import pytest
from posthorn.webhooks import (
    InvalidSignatureError,
    InvalidTimestampError,
    MissingHeadersError,
    WebhookVerificationError,
    sign,
    verify,
)

SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
MSG_ID = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk"
STAMP = 1649367553
BODY = b'{"email":"test@example.com","username":"test_user"}'
STANDARD = {
    "webhook-id": MSG_ID,
    "webhook-timestamp": str(STAMP),
    "webhook-signature": "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
}
BOTIX = {
    "X-Botix-Signature": "sha256=996637d7f89ef8f7b59f7faaf5341457472e823d8ca666d16b7bbd1dc831721d",
    "X-Botix-Timestamp": str(STAMP),
}
PARSED = {"email": "test@example.com", "username": "test_user"}


def test_the_standard_webhooks_vector_verifies():
    assert verify(BODY, STANDARD, SECRET, now=STAMP) == PARSED


def test_the_botix_vector_verifies():
    assert verify(BODY, BOTIX, SECRET, now=STAMP) == PARSED


def test_sign_reproduces_both_vectors():
    headers = sign(SECRET, MSG_ID, STAMP, BODY)
    assert headers["webhook-signature"] == STANDARD["webhook-signature"]
    assert headers["X-Botix-Signature"] == BOTIX["X-Botix-Signature"]


def test_header_names_are_matched_case_insensitively_in_any_container():
    upper = {k.upper(): v for k, v in STANDARD.items()}
    assert verify(BODY, upper, SECRET, now=STAMP) == PARSED
    assert verify(BODY, list(BOTIX.items()), SECRET, now=STAMP) == PARSED
    assert verify(BODY.decode(), {k: [v] for k, v in STANDARD.items()}, SECRET, now=STAMP) == PARSED


def test_any_of_several_signatures_may_match_during_a_rotation():
    standard = dict(STANDARD)
    standard["webhook-signature"] = "v1,AAAA" + " v1a,xyz " + STANDARD["webhook-signature"]
    assert verify(BODY, standard, SECRET, now=STAMP) == PARSED
    botix = dict(BOTIX)
    botix["X-Botix-Signature"] = "sha256=" + "00" * 32 + ", " + BOTIX["X-Botix-Signature"]
    assert verify(BODY, botix, SECRET, now=STAMP) == PARSED


def test_the_timestamp_window_is_five_minutes_each_way_by_default():
    assert verify(BODY, STANDARD, SECRET, now=STAMP + 300) == PARSED
    assert verify(BODY, STANDARD, SECRET, now=STAMP - 300) == PARSED
    with pytest.raises(InvalidTimestampError, match="old"):
        verify(BODY, STANDARD, SECRET, now=STAMP + 301)
    with pytest.raises(InvalidTimestampError, match="future"):
        verify(BODY, BOTIX, SECRET, now=STAMP - 301)
    assert verify(BODY, BOTIX, SECRET, tolerance=10_000, now=STAMP + 5000) == PARSED


def test_a_timestamp_that_is_not_unix_seconds_is_refused():
    for bad in ["soon", "-5", "1649367553.5", "9" * 40]:
        with pytest.raises(InvalidTimestampError):
            verify(BODY, {**STANDARD, "webhook-timestamp": bad}, SECRET, now=STAMP)


def test_a_tampered_body_or_wrong_secret_is_a_bad_signature():
    with pytest.raises(InvalidSignatureError):
        verify(BODY.replace(b"test_user", b"evil_user"), STANDARD, SECRET, now=STAMP)
    with pytest.raises(InvalidSignatureError):
        verify(BODY, BOTIX, "whsec_" + base64.b64encode(b"k" * 32).decode(), now=STAMP)
    with pytest.raises(InvalidSignatureError):
        verify(BODY, {**STANDARD, "webhook-signature": "v1,not-base64!!"}, SECRET, now=STAMP)
    with pytest.raises(InvalidSignatureError):
        verify(BODY, {**BOTIX, "X-Botix-Signature": "md5=abcd"}, SECRET, now=STAMP)
    # The id is signed too: a replay under another id fails.
    with pytest.raises(InvalidSignatureError):
        verify(BODY, {**STANDARD, "webhook-id": "msg_other"}, SECRET, now=STAMP)


def test_missing_headers_are_named():
    with pytest.raises(MissingHeadersError, match="webhook-id"):
        verify(BODY, {}, SECRET, now=STAMP)
    partial = {k: v for k, v in STANDARD.items() if k != "webhook-timestamp"}
    with pytest.raises(MissingHeadersError, match="^missing header webhook-timestamp$"):
        verify(BODY, partial, SECRET, now=STAMP)
    with pytest.raises(MissingHeadersError, match="x-botix-timestamp"):
        verify(BODY, {"X-Botix-Signature": BOTIX["X-Botix-Signature"]}, SECRET, now=STAMP)
    with pytest.raises(MissingHeadersError):
        verify(BODY, {**STANDARD, "webhook-signature": "  "}, SECRET, now=STAMP)


def test_every_error_is_a_webhook_verification_error_with_a_reason():
    for cls in (InvalidSignatureError, InvalidTimestampError, MissingHeadersError):
        assert issubclass(cls, WebhookVerificationError)
    with pytest.raises(WebhookVerificationError) as e:
        verify(BODY, {}, SECRET)
    assert e.value.reason


def test_a_secret_that_is_not_whsec_base64_is_a_programming_error():
    with pytest.raises(ValueError):
        verify(BODY, STANDARD, "whsec_???", now=STAMP)


def test_signatures_made_by_the_standardwebhooks_package_verify():
    from standardwebhooks.webhooks import Webhook

    for _ in range(20):
        secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        body = json.dumps({"event_id": "evt_x", "data": {"n": os.urandom(4).hex(), "ü": "ß"}})
        msg_id = "evt_" + os.urandom(12).hex()
        now = dt.datetime.now(tz=dt.timezone.utc)
        signature = Webhook(secret).sign(msg_id, now, body)
        headers = {
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": signature,
        }
        assert verify(body.encode(), headers, secret) == json.loads(body)
        # And the other way: what sign() makes, the reference package accepts.
        ours = sign(secret, msg_id, int(time.time()), body)
        standard_only = {k: v for k, v in ours.items() if k.startswith("webhook-")}
        assert Webhook(secret).verify(body, standard_only) == json.loads(body)
