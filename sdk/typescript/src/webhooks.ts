/**
 * Verifying a delivery: one call, both signature schemes, constant-time comparison.
 *
 * Posthorn signs every attempt twice: Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64>`) and its own `X-Botix-Signature: sha256=<hex>` with
 * `X-Botix-Timestamp`. Either is enough; the Standard Webhooks one is checked when present.
 * An endpoint with the ed25519 scheme signs `v1a,<base64>` (Standard Webhooks only), checked
 * with its `whpk_` public key.
 */
import { createHmac, createPublicKey, timingSafeEqual, verify as verifySignature, type KeyObject } from "node:crypto";

export const DEFAULT_TOLERANCE = 300;
// Bounds on what a sender controls: a rotation sends two signatures; more is abuse.
const MAX_SIGNATURES = 16;
const MAX_HEADER_LENGTH = 4096;
const PUBLIC_KEY_PREFIX = "whpk_";
const ED25519_KEY_LENGTH = 32;
const ED25519_SIGNATURE_LENGTH = 64;
// DER SubjectPublicKeyInfo of an Ed25519 key, up to the raw 32 bytes that follow it.
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** The delivery cannot be trusted; `reason` says why. */
export class WebhookVerificationError extends Error {
  readonly reason: string;

  constructor(reason: string) {
    super(reason);
    this.name = new.target.name;
    this.reason = reason;
  }
}

/** No signature in the headers matches the body and the secret. */
export class InvalidSignatureError extends WebhookVerificationError {}

/** The timestamp is not a number, or further than the tolerance from now. */
export class InvalidTimestampError extends WebhookVerificationError {}

/** Neither scheme's headers are all present. */
export class MissingHeadersError extends WebhookVerificationError {}

/**
 * Request headers in any common shape: Node's `req.headers`, a Fetch `Headers`, a `Map`,
 * a plain object or a list of pairs. Names are matched case-insensitively.
 */
export type HeadersLike =
  | { entries(): IterableIterator<[string, string]> }
  | Iterable<[string, string]>
  | Record<string, string | string[] | undefined>;

/**
 * Checks a delivery and returns its parsed JSON body.
 *
 * `payload` is the raw request body exactly as received (a Buffer, Uint8Array or string,
 * never re-serialised JSON); `secret` is the endpoint's `whsec_…` secret, or the `whpk_…`
 * public key of an endpoint with the ed25519 scheme (then only `v1a` signatures count).
 * Throws a subclass of `WebhookVerificationError` when the delivery is not genuine.
 */
export function verify<T = any>(
  payload: Uint8Array | ArrayBuffer | string,
  headers: HeadersLike,
  secret: string,
  tolerance: number = DEFAULT_TOLERANCE,
  now: number = Date.now() / 1000,
): T {
  const body = toBuffer(payload);
  // A bad public key is a setup mistake: thrown whatever the headers are.
  const publicKey = typeof secret === "string" && secret.startsWith(PUBLIC_KEY_PREFIX) ? ed25519Key(secret) : null;
  const h = lowerHeaders(headers);
  const standard = ["webhook-id", "webhook-timestamp", "webhook-signature"];
  const botix = ["x-botix-signature", "x-botix-timestamp"];
  // X-Botix signatures are HMACs only: a public key cannot check them.
  const schemes = publicKey ? [standard] : [standard, botix];
  let matched: boolean;
  if (standard.every((n) => h.has(n))) {
    const [id, stamp, header] = standard.map((n) => headerValue(h, n));
    checkTimestamp(stamp, now, tolerance);
    const content = Buffer.concat([Buffer.from(`${id}.${stamp}.`), body]);
    if (publicKey) {
      // Nothing secret is involved, so stopping at the first match leaks nothing.
      const signatures = standardSignatures(header, "v1a", ED25519_SIGNATURE_LENGTH);
      matched = signatures.some((sig) => verifySignature(null, content, publicKey, sig));
    } else {
      matched = anyEqual(standardSignatures(header), hmac(standardKey(secret), content));
    }
  } else if (!publicKey && botix.every((n) => h.has(n))) {
    const [header, stamp] = botix.map((n) => headerValue(h, n));
    checkTimestamp(stamp, now, tolerance);
    const expected = hmac(Buffer.from(secret, "utf8"), Buffer.concat([Buffer.from(`${stamp}.`), body]));
    matched = anyEqual(botixSignatures(header), expected);
  } else {
    // Name what is missing from the scheme the sender started on, else from both.
    let started = schemes.filter((s) => s.some((n) => h.has(n)));
    if (started.length === 0) started = schemes;
    const missing = started.flat().filter((n) => !h.has(n));
    throw new MissingHeadersError(`missing header ${missing.join(", ")}`);
  }
  if (!matched) {
    throw new InvalidSignatureError(`no signature matches the body and the ${publicKey ? "public key" : "secret"}`);
  }
  try {
    return JSON.parse(body.toString("utf8")) as T;
  } catch (e) {
    throw new WebhookVerificationError(`the body is not JSON: ${(e as Error).message}`);
  }
}

/** The headers Posthorn would send for `payload`: for tests of your receiver. */
export function sign(secret: string, msgId: string, timestamp: number, payload: Uint8Array | string): Record<string, string> {
  const body = toBuffer(payload);
  const standard = hmac(standardKey(secret), Buffer.concat([Buffer.from(`${msgId}.${timestamp}.`), body]));
  const botix = hmac(Buffer.from(secret, "utf8"), Buffer.concat([Buffer.from(`${timestamp}.`), body]));
  return {
    "webhook-id": msgId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": `v1,${standard.toString("base64")}`,
    "X-Botix-Signature": `sha256=${botix.toString("hex")}`,
    "X-Botix-Timestamp": String(timestamp),
  };
}

function toBuffer(payload: Uint8Array | ArrayBuffer | string): Buffer {
  if (typeof payload === "string") return Buffer.from(payload, "utf8");
  if (payload instanceof ArrayBuffer) return Buffer.from(new Uint8Array(payload));
  if (payload instanceof Uint8Array) return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  throw new TypeError("payload must be the raw body: a Buffer, Uint8Array or string (not parsed JSON)");
}

function lowerHeaders(headers: HeadersLike): Map<string, string> {
  const out = new Map<string, string>();
  // Arrays have entries() too, but of [index, pair]: take them as they are.
  const entries: Iterable<[string, unknown]> = Array.isArray(headers)
    ? headers
    : typeof (headers as any).entries === "function"
      ? (headers as any).entries()
      : Symbol.iterator in (headers as object)
        ? (headers as Iterable<[string, string]>)
        : Object.entries(headers as Record<string, unknown>);
  for (const [name, raw] of entries) {
    const value = (Array.isArray(raw) ? raw.join(", ") : raw == null ? "" : String(raw)).trim();
    if (value) out.set(String(name).toLowerCase(), value);
  }
  return out;
}

function headerValue(h: Map<string, string>, name: string): string {
  const value = h.get(name)!;
  if (value.length > MAX_HEADER_LENGTH) throw new WebhookVerificationError(`header ${name} is too long`);
  return value;
}

function checkTimestamp(stamp: string, now: number, tolerance: number): void {
  if (!/^\d{1,12}$/.test(stamp)) {
    throw new InvalidTimestampError(`timestamp \`${stamp.slice(0, 20)}\` is not Unix seconds`);
  }
  const age = now - Number(stamp);
  if (age > tolerance) {
    throw new InvalidTimestampError(`timestamp is ${Math.floor(age)} s old, more than the tolerance of ${tolerance} s`);
  }
  if (-age > tolerance) {
    throw new InvalidTimestampError(
      `timestamp is ${Math.floor(-age)} s in the future, more than the tolerance of ${tolerance} s`,
    );
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function standardKey(secret: string): Buffer {
  const raw = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  if (!raw || raw.length % 4 !== 0 || !BASE64.test(raw)) {
    throw new TypeError("the secret is not a whsec_ secret (base64 after the prefix)");
  }
  return Buffer.from(raw, "base64");
}

function ed25519Key(key: string): KeyObject {
  const raw = key.slice(PUBLIC_KEY_PREFIX.length);
  const bytes = raw.length % 4 === 0 && BASE64.test(raw) ? Buffer.from(raw, "base64") : Buffer.alloc(0);
  if (bytes.length !== ED25519_KEY_LENGTH) {
    throw new TypeError("the key is not a whpk_ public key (base64 of 32 bytes after the prefix)");
  }
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, bytes]), format: "der", type: "spki" });
}

function hmac(key: Buffer, message: Buffer): Buffer {
  return createHmac("sha256", key).update(message).digest();
}

function anyEqual(candidates: Buffer[], expected: Buffer): boolean {
  // Every candidate is compared, so the time taken does not tell which one was close.
  let matched = false;
  for (const candidate of candidates) {
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  return matched;
}

/**
 * `<version>,<base64>` entries separated by spaces; other versions, and signatures of
 * another `length` when one is given, are skipped.
 */
function standardSignatures(header: string, version = "v1", length?: number): Buffer[] {
  return header
    .split(/\s+/)
    .slice(0, MAX_SIGNATURES)
    .map((entry) => entry.split(","))
    .filter(([found, sig]) => found === version && sig && sig.length % 4 === 0 && BASE64.test(sig))
    .map(([, sig]) => Buffer.from(sig, "base64"))
    .filter((sig) => length === undefined || sig.length === length);
}

/** `sha256=<hex>` entries separated by commas (two while a rotated secret is valid). */
function botixSignatures(header: string): Buffer[] {
  return header
    .split(",")
    .slice(0, MAX_SIGNATURES)
    .map((entry) => entry.trim().split("="))
    .filter(([scheme, sig]) => scheme === "sha256" && sig && /^([0-9a-fA-F]{2})+$/.test(sig))
    .map(([, sig]) => Buffer.from(sig, "hex"));
}
