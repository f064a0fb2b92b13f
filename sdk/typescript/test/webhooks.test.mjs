// verify(): the SPEC.md test vectors, every error, and the standardwebhooks package.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import {
  verify,
  sign,
  WebhookVerificationError,
  InvalidSignatureError,
  InvalidTimestampError,
  MissingHeadersError,
} from "../dist/esm/index.js";
import { env } from "./helpers.mjs";

const SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
const MSG_ID = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk";
const STAMP = 1649367553;
const BODY = '{"email":"test@example.com","username":"test_user"}';
const STANDARD = {
  "webhook-id": MSG_ID,
  "webhook-timestamp": String(STAMP),
  "webhook-signature": "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=",
};
const BOTIX = {
  "X-Botix-Signature": "sha256=996637d7f89ef8f7b59f7faaf5341457472e823d8ca666d16b7bbd1dc831721d",
  "X-Botix-Timestamp": String(STAMP),
};
const PARSED = { email: "test@example.com", username: "test_user" };

test("the Standard Webhooks vector verifies", () => {
  assert.deepEqual(verify(Buffer.from(BODY), STANDARD, SECRET, 300, STAMP), PARSED);
});

test("the X-Botix vector verifies", () => {
  assert.deepEqual(verify(BODY, BOTIX, SECRET, 300, STAMP), PARSED);
});

test("sign reproduces both vectors", () => {
  const h = sign(SECRET, MSG_ID, STAMP, BODY);
  assert.equal(h["webhook-signature"], STANDARD["webhook-signature"]);
  assert.equal(h["X-Botix-Signature"], BOTIX["X-Botix-Signature"]);
});

test("headers are matched case-insensitively in any container", () => {
  const upper = Object.fromEntries(Object.entries(STANDARD).map(([k, v]) => [k.toUpperCase(), v]));
  assert.deepEqual(verify(BODY, upper, SECRET, 300, STAMP), PARSED);
  assert.deepEqual(verify(BODY, new Headers(BOTIX), SECRET, 300, STAMP), PARSED);
  assert.deepEqual(verify(BODY, new Map(Object.entries(STANDARD)), SECRET, 300, STAMP), PARSED);
  assert.deepEqual(verify(BODY, Object.entries(BOTIX), SECRET, 300, STAMP), PARSED);
  const nodeStyle = Object.fromEntries(Object.entries(STANDARD).map(([k, v]) => [k, [v]]));
  assert.deepEqual(verify(new TextEncoder().encode(BODY), nodeStyle, SECRET, 300, STAMP), PARSED);
});

test("any of several signatures may match during a rotation", () => {
  const standard = { ...STANDARD, "webhook-signature": `v1,AAAA v1a,xyz ${STANDARD["webhook-signature"]}` };
  assert.deepEqual(verify(BODY, standard, SECRET, 300, STAMP), PARSED);
  const botix = { ...BOTIX, "X-Botix-Signature": `sha256=${"00".repeat(32)}, ${BOTIX["X-Botix-Signature"]}` };
  assert.deepEqual(verify(BODY, botix, SECRET, 300, STAMP), PARSED);
});

test("the timestamp window is five minutes each way by default", () => {
  assert.deepEqual(verify(BODY, STANDARD, SECRET, undefined, STAMP + 300), PARSED);
  assert.deepEqual(verify(BODY, STANDARD, SECRET, undefined, STAMP - 300), PARSED);
  assert.throws(() => verify(BODY, STANDARD, SECRET, undefined, STAMP + 301), (e) => e instanceof InvalidTimestampError && /old/.test(e.reason));
  assert.throws(() => verify(BODY, BOTIX, SECRET, undefined, STAMP - 301), (e) => e instanceof InvalidTimestampError && /future/.test(e.reason));
  assert.deepEqual(verify(BODY, BOTIX, SECRET, 10_000, STAMP + 5000), PARSED);
  // Without `now`, the clock decides: the 2022 vector is stale.
  assert.throws(() => verify(BODY, STANDARD, SECRET), InvalidTimestampError);
});

test("a timestamp that is not Unix seconds is refused", () => {
  for (const bad of ["soon", "-5", "1649367553.5", "9".repeat(40)]) {
    assert.throws(() => verify(BODY, { ...STANDARD, "webhook-timestamp": bad }, SECRET, 300, STAMP), InvalidTimestampError);
  }
});

test("a tampered body, a wrong secret or a garbled signature is a bad signature", () => {
  assert.throws(() => verify(BODY.replace("test_user", "evil_user"), STANDARD, SECRET, 300, STAMP), InvalidSignatureError);
  const other = "whsec_" + Buffer.alloc(32, "k").toString("base64");
  assert.throws(() => verify(BODY, BOTIX, other, 300, STAMP), InvalidSignatureError);
  assert.throws(() => verify(BODY, { ...STANDARD, "webhook-signature": "v1,not-base64!!" }, SECRET, 300, STAMP), InvalidSignatureError);
  assert.throws(() => verify(BODY, { ...BOTIX, "X-Botix-Signature": "md5=abcd" }, SECRET, 300, STAMP), InvalidSignatureError);
  assert.throws(() => verify(BODY, { ...STANDARD, "webhook-id": "msg_other" }, SECRET, 300, STAMP), InvalidSignatureError);
});

test("missing headers are named", () => {
  assert.throws(() => verify(BODY, {}, SECRET, 300, STAMP), (e) => e instanceof MissingHeadersError && /webhook-id/.test(e.reason));
  const { "webhook-timestamp": _, ...partial } = STANDARD;
  assert.throws(() => verify(BODY, partial, SECRET, 300, STAMP), (e) => e instanceof MissingHeadersError && e.reason === "missing header webhook-timestamp");
  assert.throws(
    () => verify(BODY, { "X-Botix-Signature": BOTIX["X-Botix-Signature"] }, SECRET, 300, STAMP),
    (e) => e instanceof MissingHeadersError && /x-botix-timestamp/.test(e.reason),
  );
  assert.throws(() => verify(BODY, { ...STANDARD, "webhook-signature": "  " }, SECRET, 300, STAMP), MissingHeadersError);
});

test("every error is a WebhookVerificationError with a reason", () => {
  for (const cls of [InvalidSignatureError, InvalidTimestampError, MissingHeadersError]) {
    assert.ok(cls.prototype instanceof WebhookVerificationError);
  }
  try {
    verify(BODY, {}, SECRET);
    assert.fail("verify accepted no headers");
  } catch (e) {
    assert.ok(e instanceof WebhookVerificationError && e.reason && e.name === "MissingHeadersError");
  }
});

test("parsed JSON is no payload, and a secret that is not whsec_ base64 is a programming error", () => {
  assert.throws(() => verify(JSON.parse(BODY), STANDARD, SECRET, 300, STAMP), TypeError);
  assert.throws(() => verify(BODY, STANDARD, "whsec_???", 300, STAMP), TypeError);
});

test("signatures made by the standardwebhooks package verify", (t) => {
  const path = env(t, "POSTHORN_SWH_FIXTURES");
  if (!path) return;
  const cases = JSON.parse(readFileSync(path, "utf8"));
  assert.ok(cases.length >= 10);
  for (const c of cases) {
    assert.deepEqual(verify(c.body, c.headers, c.secret, 300, c.timestamp), JSON.parse(c.body));
  }
  // A rotation: the reference package's signatures under two secrets, either one verifies.
  const rotated = cases.filter((c) => c.rotation);
  assert.ok(rotated.length > 0);
});

test("random secrets round-trip through sign", () => {
  for (let i = 0; i < 20; i++) {
    const secret = "whsec_" + randomBytes(32).toString("base64");
    const body = JSON.stringify({ n: randomBytes(4).toString("hex"), "ü": "ß" });
    const now = Math.floor(Date.now() / 1000);
    assert.deepEqual(verify(body, sign(secret, "evt_x", now, body), secret), JSON.parse(body));
  }
});
