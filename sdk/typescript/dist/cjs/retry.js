"use strict";
/**
 * When to try a request again and how long to wait: pure functions, no I/O.
 *
 * Shared by all Posthorn client libraries: on 429 wait the larger of `Retry-After` and an
 * exponential backoff with jitter; on 5xx and connection errors retry only requests that
 * are safe to repeat; never retry other 4xx; wait for the minute's reset ahead of time
 * when `X-RateLimit-Remaining` runs low.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_POLICY = void 0;
exports.backoff = backoff;
exports.parseRetryAfter = parseRetryAfter;
exports.retryWait = retryWait;
exports.DEFAULT_POLICY = {
    maxRetries: 5,
    backoffBase: 0.5,
    backoffCap: 30,
    maxWait: 120,
    rateLimitThreshold: 1,
};
/**
 * Seconds before retry number `retry` (0-based): half the capped exponential step fixed,
 * half random ("equal jitter"), so clients spread out but never hammer.
 */
function backoff(retry, policy, rand = Math.random) {
    const step = Math.min(policy.backoffCap, policy.backoffBase * 2 ** Math.min(retry, 32));
    return step / 2 + (rand() * step) / 2;
}
/** `Retry-After` as seconds from `now` (Unix seconds): delta-seconds or an HTTP-date. */
function parseRetryAfter(value, now) {
    if (value == null)
        return null;
    const text = value.trim();
    if (/^\d+$/.test(text))
        return Math.min(Number(text), 1e9);
    // HTTP-dates name a weekday and a month; Date.parse alone would take "1" as a year.
    if (!/^[A-Za-z]{3}, /.test(text))
        return null;
    const when = Date.parse(text);
    if (Number.isNaN(when))
        return null;
    return Math.max(0, when / 1000 - now);
}
/**
 * The wait before retrying: after a 429 the larger of Retry-After and the backoff; after
 * other statuses and connection errors (`status` null) the backoff.
 */
function retryWait(status, retry, retryAfter, policy, rand = Math.random) {
    const wait = backoff(retry, policy, rand);
    return status === 429 && retryAfter != null ? Math.max(wait, retryAfter) : wait;
}
