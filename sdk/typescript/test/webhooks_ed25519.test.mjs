// verify() with a whpk_ public key: v1a (ed25519) signatures, and the shared vector.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as edSign } from "node:crypto";
import { verify, sign, InvalidSignatureError, InvalidTimestampError, MissingHeadersError } from "../dist/esm/index.js";

const MSG_ID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W";
const STAMP = 1764950400;
const BODY = '{"event":"order.paid","data":{"order":42,"note":"Grüße €"}}';
const PARSED = { event: "order.paid", data: { order: 42, note: "Grüße €" } };
const SECRET = "whsec_" + Buffer.alloc(32, "s").toString("base64");

// Made once with the Python package's `cryptography`; the Python and PHP suites hold the
// same values, so the three libraries agree on the signed bytes. The seed is the private
// key: ed25519 signing is deterministic, so each suite can also remake the signature.
const VECTOR_SEED = "1G/dyz1Usx6eVnmVuZcCbPefEpAOgWJOdsTQcKAc94Q=";
const VECTOR_KEY = "whpk_x8CAWZvvp73vP3kQ4oVcputXzz2C5C+saNN0AHq/PGU=";
const VECTOR_SIGNATURE = "v1a,UIDhEnf/wmVVw09YYzEjiVY0kvvohzmx7ud3JLBeozSGtIwFUfi55t6ZFFvDVB8KqrJL7M5R1UFFjA3tFzo6AQ==";
// DER PKCS#8 of an Ed25519 private key, up to the 32-byte seed that follows it.
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

const keyPair = () => generateKeyPairSync("ed25519").privateKey;
const whpk = (privateKey) => {
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  return "whpk_" + spki.subarray(spki.length - 32).toString("base64");
};
const v1a = (privateKey, msgId = MSG_ID, stamp = STAMP, body = BODY) =>
  "v1a," + edSign(null, Buffer.from(`${msgId}.${stamp}.${body}`), privateKey).toString("base64");
const headers = (signature, msgId = MSG_ID, stamp = STAMP) => ({
  "webhook-id": msgId,
  "webhook-timestamp": String(stamp),
  "webhook-signature": signature,
});
const refused = (cls, pattern) => (e) => e instanceof cls && pattern.test(e.reason);

test("a v1a signature verifies with the public key", () => {
  const key = keyPair();
  assert.deepEqual(verify(BODY, headers(v1a(key)), whpk(key), 300, STAMP), PARSED);
  assert.deepEqual(verify(Buffer.from(BODY), headers(v1a(key)), whpk(key), 300, STAMP + 300), PARSED);
});

test("during a switch of scheme each key picks its own entries", () => {
  const key = keyPair();
  const hmacEntry = sign(SECRET, MSG_ID, STAMP, BODY)["webhook-signature"];
  assert.deepEqual(verify(BODY, headers(`v1,AAAA ${v1a(key)}`), whpk(key), 300, STAMP), PARSED);
  const both = headers(`${hmacEntry} ${v1a(key)}`);
  assert.deepEqual(verify(BODY, both, whpk(key), 300, STAMP), PARSED);
  assert.deepEqual(verify(BODY, both, SECRET, 300, STAMP), PARSED);
  // Several v1a entries: any one by the key is enough.
  assert.deepEqual(verify(BODY, headers(`${v1a(keyPair())} ${v1a(key)}`), whpk(key), 300, STAMP), PARSED);
});

test("a tampered delivery or another key's signature is a bad signature", () => {
  const key = keyPair();
  const cases = [
    [BODY.replace("42", "43"), headers(v1a(key))],
    [BODY, headers(v1a(key), "msg_other")],
    [BODY, headers(v1a(key, MSG_ID, STAMP - 1), MSG_ID, STAMP)],
    [BODY, headers(v1a(keyPair()))],
    [BODY, headers("v1a,not-base64!!")],
    [BODY, headers("v1a," + Buffer.alloc(32, "x").toString("base64"))],
    // A v1 entry, even a valid-looking one, is never checked against a public key.
    [BODY, headers("v1," + v1a(key).slice("v1a,".length))],
  ];
  for (const [body, h] of cases) {
    assert.throws(() => verify(body, h, whpk(key), 300, STAMP), refused(InvalidSignatureError, /no signature matches/));
  }
});

test("the timestamp window applies as with a secret", () => {
  const key = keyPair();
  assert.throws(() => verify(BODY, headers(v1a(key)), whpk(key), 300, STAMP + 301), refused(InvalidTimestampError, /old/));
  assert.throws(() => verify(BODY, headers(v1a(key)), whpk(key), undefined, STAMP - 301), refused(InvalidTimestampError, /future/));
  assert.throws(() => verify(BODY, headers(v1a(key)), whpk(key)), InvalidTimestampError);
  assert.deepEqual(verify(BODY, headers(v1a(key)), whpk(key), 10_000, STAMP + 5000), PARSED);
});

test("a whsec_ secret ignores v1a entries", () => {
  assert.throws(() => verify(BODY, headers(v1a(keyPair())), SECRET, 300, STAMP), InvalidSignatureError);
});

test("a public key needs the Standard Webhooks headers", () => {
  const { "X-Botix-Signature": sig, "X-Botix-Timestamp": stamp } = sign(SECRET, MSG_ID, STAMP, BODY);
  assert.throws(
    () => verify(BODY, { "X-Botix-Signature": sig, "X-Botix-Timestamp": stamp }, whpk(keyPair()), 300, STAMP),
    refused(MissingHeadersError, /^missing header webhook-id, webhook-timestamp, webhook-signature$/),
  );
});

test("a key that is not whpk_ base64 of 32 bytes is a programming error", () => {
  for (const bad of ["whpk_", "whpk_???", "whpk_" + Buffer.alloc(31).toString("base64"), "whpk_" + Buffer.alloc(33).toString("base64")]) {
    assert.throws(() => verify(BODY, headers("v1a,AAAA"), bad, 300, STAMP), (e) => e instanceof TypeError && /whpk_/.test(e.message));
  }
});

test("the shared vector verifies, and signing it again gives the same bytes", () => {
  assert.deepEqual(verify(BODY, headers(VECTOR_SIGNATURE), VECTOR_KEY, 300, STAMP), PARSED);
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, Buffer.from(VECTOR_SEED, "base64")]), format: "der", type: "pkcs8" });
  assert.equal(whpk(key), VECTOR_KEY);
  assert.equal(v1a(key), VECTOR_SIGNATURE);
});
