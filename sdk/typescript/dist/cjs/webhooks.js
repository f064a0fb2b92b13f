"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MissingHeadersError = exports.InvalidTimestampError = exports.InvalidSignatureError = exports.WebhookVerificationError = exports.DEFAULT_TOLERANCE = void 0;
exports.verify = verify;
exports.sign = sign;
/**
 * Verifying a delivery: one call, both signature schemes, constant-time comparison.
 *
 * Posthorn signs every attempt twice: Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64>`) and its own `X-Botix-Signature: sha256=<hex>` with
 * `X-Botix-Timestamp`. Either is enough; the Standard Webhooks one is checked when present.
 * An endpoint with the ed25519 scheme signs `v1a,<base64>` (Standard Webhooks only), checked
 * with its `whpk_` public key.
 */
const node_crypto_1 = require("node:crypto");
exports.DEFAULT_TOLERANCE = 300;
// Bounds on what a sender controls: a rotation sends two signatures; more is abuse.
const MAX_SIGNATURES = 16;
const MAX_HEADER_LENGTH = 4096;
const PUBLIC_KEY_PREFIX = "whpk_";
const ED25519_KEY_LENGTH = 32;
const ED25519_SIGNATURE_LENGTH = 64;
// DER SubjectPublicKeyInfo of an Ed25519 key, up to the raw 32 bytes that follow it.
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
/** The delivery cannot be trusted; `reason` says why. */
class WebhookVerificationError extends Error {
    reason;
    constructor(reason) {
        super(reason);
        this.name = new.target.name;
        this.reason = reason;
    }
}
exports.WebhookVerificationError = WebhookVerificationError;
/** No signature in the headers matches the body and the secret. */
class InvalidSignatureError extends WebhookVerificationError {
}
exports.InvalidSignatureError = InvalidSignatureError;
/** The timestamp is not a number, or further than the tolerance from now. */
class InvalidTimestampError extends WebhookVerificationError {
}
exports.InvalidTimestampError = InvalidTimestampError;
/** Neither scheme's headers are all present. */
class MissingHeadersError extends WebhookVerificationError {
}
exports.MissingHeadersError = MissingHeadersError;
/**
 * Checks a delivery and returns its parsed JSON body.
 *
 * `payload` is the raw request body exactly as received (a Buffer, Uint8Array or string,
 * never re-serialised JSON); `secret` is the endpoint's `whsec_…` secret, or the `whpk_…`
 * public key of an endpoint with the ed25519 scheme (then only `v1a` signatures count).
 * Throws a subclass of `WebhookVerificationError` when the delivery is not genuine.
 */
function verify(payload, headers, secret, tolerance = exports.DEFAULT_TOLERANCE, now = Date.now() / 1000) {
    const body = toBuffer(payload);
    // A bad public key is a setup mistake: thrown whatever the headers are.
    const publicKey = typeof secret === "string" && secret.startsWith(PUBLIC_KEY_PREFIX) ? ed25519Key(secret) : null;
    const h = lowerHeaders(headers);
    const standard = ["webhook-id", "webhook-timestamp", "webhook-signature"];
    const botix = ["x-botix-signature", "x-botix-timestamp"];
    // X-Botix signatures are HMACs only: a public key cannot check them.
    const schemes = publicKey ? [standard] : [standard, botix];
    let matched;
    if (standard.every((n) => h.has(n))) {
        const [id, stamp, header] = standard.map((n) => headerValue(h, n));
        checkTimestamp(stamp, now, tolerance);
        const content = Buffer.concat([Buffer.from(`${id}.${stamp}.`), body]);
        if (publicKey) {
            // Nothing secret is involved, so stopping at the first match leaks nothing.
            const signatures = standardSignatures(header, "v1a", ED25519_SIGNATURE_LENGTH);
            matched = signatures.some((sig) => (0, node_crypto_1.verify)(null, content, publicKey, sig));
        }
        else {
            matched = anyEqual(standardSignatures(header), hmac(standardKey(secret), content));
        }
    }
    else if (!publicKey && botix.every((n) => h.has(n))) {
        const [header, stamp] = botix.map((n) => headerValue(h, n));
        checkTimestamp(stamp, now, tolerance);
        const expected = hmac(Buffer.from(secret, "utf8"), Buffer.concat([Buffer.from(`${stamp}.`), body]));
        matched = anyEqual(botixSignatures(header), expected);
    }
    else {
        // Name what is missing from the scheme the sender started on, else from both.
        let started = schemes.filter((s) => s.some((n) => h.has(n)));
        if (started.length === 0)
            started = schemes;
        const missing = started.flat().filter((n) => !h.has(n));
        throw new MissingHeadersError(`missing header ${missing.join(", ")}`);
    }
    if (!matched) {
        throw new InvalidSignatureError(`no signature matches the body and the ${publicKey ? "public key" : "secret"}`);
    }
    try {
        return JSON.parse(body.toString("utf8"));
    }
    catch (e) {
        throw new WebhookVerificationError(`the body is not JSON: ${e.message}`);
    }
}
/** The headers Posthorn would send for `payload`: for tests of your receiver. */
function sign(secret, msgId, timestamp, payload) {
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
function toBuffer(payload) {
    if (typeof payload === "string")
        return Buffer.from(payload, "utf8");
    if (payload instanceof ArrayBuffer)
        return Buffer.from(new Uint8Array(payload));
    if (payload instanceof Uint8Array)
        return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
    throw new TypeError("payload must be the raw body: a Buffer, Uint8Array or string (not parsed JSON)");
}
function lowerHeaders(headers) {
    const out = new Map();
    // Arrays have entries() too, but of [index, pair]: take them as they are.
    const entries = Array.isArray(headers)
        ? headers
        : typeof headers.entries === "function"
            ? headers.entries()
            : Symbol.iterator in headers
                ? headers
                : Object.entries(headers);
    for (const [name, raw] of entries) {
        const value = (Array.isArray(raw) ? raw.join(", ") : raw == null ? "" : String(raw)).trim();
        if (value)
            out.set(String(name).toLowerCase(), value);
    }
    return out;
}
function headerValue(h, name) {
    const value = h.get(name);
    if (value.length > MAX_HEADER_LENGTH)
        throw new WebhookVerificationError(`header ${name} is too long`);
    return value;
}
function checkTimestamp(stamp, now, tolerance) {
    if (!/^\d{1,12}$/.test(stamp)) {
        throw new InvalidTimestampError(`timestamp \`${stamp.slice(0, 20)}\` is not Unix seconds`);
    }
    const age = now - Number(stamp);
    if (age > tolerance) {
        throw new InvalidTimestampError(`timestamp is ${Math.floor(age)} s old, more than the tolerance of ${tolerance} s`);
    }
    if (-age > tolerance) {
        throw new InvalidTimestampError(`timestamp is ${Math.floor(-age)} s in the future, more than the tolerance of ${tolerance} s`);
    }
}
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
function standardKey(secret) {
    const raw = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
    if (!raw || raw.length % 4 !== 0 || !BASE64.test(raw)) {
        throw new TypeError("the secret is not a whsec_ secret (base64 after the prefix)");
    }
    return Buffer.from(raw, "base64");
}
function ed25519Key(key) {
    const raw = key.slice(PUBLIC_KEY_PREFIX.length);
    const bytes = raw.length % 4 === 0 && BASE64.test(raw) ? Buffer.from(raw, "base64") : Buffer.alloc(0);
    if (bytes.length !== ED25519_KEY_LENGTH) {
        throw new TypeError("the key is not a whpk_ public key (base64 of 32 bytes after the prefix)");
    }
    return (0, node_crypto_1.createPublicKey)({ key: Buffer.concat([ED25519_SPKI_PREFIX, bytes]), format: "der", type: "spki" });
}
function hmac(key, message) {
    return (0, node_crypto_1.createHmac)("sha256", key).update(message).digest();
}
function anyEqual(candidates, expected) {
    // Every candidate is compared, so the time taken does not tell which one was close.
    let matched = false;
    for (const candidate of candidates) {
        if (candidate.length === expected.length && (0, node_crypto_1.timingSafeEqual)(candidate, expected))
            matched = true;
    }
    return matched;
}
/**
 * `<version>,<base64>` entries separated by spaces; other versions, and signatures of
 * another `length` when one is given, are skipped.
 */
function standardSignatures(header, version = "v1", length) {
    return header
        .split(/\s+/)
        .slice(0, MAX_SIGNATURES)
        .map((entry) => entry.split(","))
        .filter(([found, sig]) => found === version && sig && sig.length % 4 === 0 && BASE64.test(sig))
        .map(([, sig]) => Buffer.from(sig, "base64"))
        .filter((sig) => length === undefined || sig.length === length);
}
/** `sha256=<hex>` entries separated by commas (two while a rotated secret is valid). */
function botixSignatures(header) {
    return header
        .split(",")
        .slice(0, MAX_SIGNATURES)
        .map((entry) => entry.trim().split("="))
        .filter(([scheme, sig]) => scheme === "sha256" && sig && /^([0-9a-fA-F]{2})+$/.test(sig))
        .map(([, sig]) => Buffer.from(sig, "hex"));
}
