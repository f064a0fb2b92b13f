"""verify() with a whpk_ public key: v1a (ed25519) signatures, and the shared vector."""

import base64
import sys

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from posthorn.webhooks import (
    InvalidSignatureError,
    InvalidTimestampError,
    MissingHeadersError,
    sign,
    verify,
)

MSG_ID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
STAMP = 1764950400
BODY = '{"event":"order.paid","data":{"order":42,"note":"Grüße €"}}'.encode()
PARSED = {"event": "order.paid", "data": {"order": 42, "note": "Grüße €"}}

# Made once with this package's `cryptography`; the TypeScript and PHP suites hold the
# same values, so the three libraries agree on the signed bytes. The seed is the private
# key: ed25519 signing is deterministic, so each suite can also remake the signature.
VECTOR_SEED = "1G/dyz1Usx6eVnmVuZcCbPefEpAOgWJOdsTQcKAc94Q="
VECTOR_KEY = "whpk_x8CAWZvvp73vP3kQ4oVcputXzz2C5C+saNN0AHq/PGU="
VECTOR_SIGNATURE = (
    "v1a,UIDhEnf/wmVVw09YYzEjiVY0kvvohzmx7ud3JLBeozSGtIwFUfi55t6ZFFvDVB8KqrJL7M5R1UFFjA3tFzo6AQ=="
)


def whpk(private):
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return "whpk_" + base64.b64encode(raw).decode()


def v1a(private, msg_id=MSG_ID, stamp=STAMP, body=BODY):
    signature = private.sign(f"{msg_id}.{stamp}.".encode() + body)
    return "v1a," + base64.b64encode(signature).decode()


def headers(signature, msg_id=MSG_ID, stamp=STAMP):
    return {"webhook-id": msg_id, "webhook-timestamp": str(stamp), "webhook-signature": signature}


@pytest.fixture
def private():
    return Ed25519PrivateKey.generate()


def test_a_v1a_signature_verifies_with_the_public_key(private):
    assert verify(BODY, headers(v1a(private)), whpk(private), now=STAMP) == PARSED
    assert verify(BODY.decode(), headers(v1a(private)), whpk(private), now=STAMP + 300) == PARSED


def test_during_a_switch_of_scheme_each_key_picks_its_own_entries(private):
    secret = "whsec_" + base64.b64encode(b"s" * 32).decode()
    hmac_entry = sign(secret, MSG_ID, STAMP, BODY)["webhook-signature"]
    both = headers(f"v1,AAAA {v1a(private)}")
    assert verify(BODY, both, whpk(private), now=STAMP) == PARSED
    both = headers(f"{hmac_entry} {v1a(private)}")
    assert verify(BODY, both, whpk(private), now=STAMP) == PARSED
    assert verify(BODY, both, secret, now=STAMP) == PARSED
    # Several v1a entries: any one by the key is enough.
    other = Ed25519PrivateKey.generate()
    assert verify(BODY, headers(f"{v1a(other)} {v1a(private)}"), whpk(private), now=STAMP) == PARSED


def test_a_tampered_delivery_or_another_keys_signature_is_a_bad_signature(private):
    key = whpk(private)
    refused = [
        (BODY.replace(b"42", b"43"), headers(v1a(private))),
        (BODY, headers(v1a(private), msg_id="msg_other")),
        (BODY, headers(v1a(private, stamp=STAMP - 1), stamp=STAMP)),
        (BODY, headers(v1a(Ed25519PrivateKey.generate()))),
        (BODY, headers("v1a,not-base64!!")),
        (BODY, headers("v1a," + base64.b64encode(b"x" * 32).decode())),
        # A v1 entry, even a valid-looking one, is never checked against a public key.
        (BODY, headers("v1," + v1a(private).partition(",")[2])),
    ]
    for body, h in refused:
        with pytest.raises(InvalidSignatureError, match="no signature matches"):
            verify(body, h, key, now=STAMP)


def test_the_timestamp_window_applies_as_with_a_secret(private):
    with pytest.raises(InvalidTimestampError, match="old"):
        verify(BODY, headers(v1a(private)), whpk(private), now=STAMP + 301)
    with pytest.raises(InvalidTimestampError, match="future"):
        verify(BODY, headers(v1a(private)), whpk(private), now=STAMP - 301)
    assert verify(BODY, headers(v1a(private)), whpk(private), 10_000, now=STAMP + 5000) == PARSED


def test_a_whsec_secret_ignores_v1a_entries(private):
    secret = "whsec_" + base64.b64encode(b"s" * 32).decode()
    with pytest.raises(InvalidSignatureError):
        verify(BODY, headers(v1a(private)), secret, now=STAMP)


def test_a_public_key_needs_the_standard_webhooks_headers(private):
    botix = {k: v for k, v in sign("whsec_AAAA", MSG_ID, STAMP, BODY).items() if k.startswith("X-")}
    with pytest.raises(MissingHeadersError, match="^missing header webhook-id, webhook-timestamp, webhook-signature$"):
        verify(BODY, botix, whpk(private), now=STAMP)


def test_a_key_that_is_not_whpk_base64_of_32_bytes_is_a_programming_error():
    for bad in ["whpk_", "whpk_???", "whpk_" + base64.b64encode(b"k" * 31).decode(),
                "whpk_" + base64.b64encode(b"k" * 33).decode()]:
        with pytest.raises(ValueError, match="whpk_"):
            verify(BODY, headers("v1a,AAAA"), bad, now=STAMP)


def test_without_cryptography_hmac_works_and_a_public_key_says_what_to_install(monkeypatch, private):
    # None in sys.modules makes an import fail, as if the package were not installed.
    for name in ("cryptography", "cryptography.exceptions",
                 "cryptography.hazmat.primitives.asymmetric.ed25519"):
        monkeypatch.setitem(sys.modules, name, None)
    secret = "whsec_" + base64.b64encode(b"s" * 32).decode()
    assert verify(BODY, sign(secret, MSG_ID, STAMP, BODY), secret, now=STAMP) == PARSED
    with pytest.raises(ImportError, match=r"posthorn\[ed25519\]"):
        verify(BODY, headers(v1a(private)), whpk(private), now=STAMP)


def test_the_shared_vector_verifies_and_signing_it_again_gives_the_same_bytes():
    assert verify(BODY, headers(VECTOR_SIGNATURE), VECTOR_KEY, now=STAMP) == PARSED
    private = Ed25519PrivateKey.from_private_bytes(base64.b64decode(VECTOR_SEED))
    assert whpk(private) == VECTOR_KEY
    assert v1a(private) == VECTOR_SIGNATURE
