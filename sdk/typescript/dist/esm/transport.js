/** One HTTP exchange with the API, repeated as `retry.ts` decides (global fetch). */
import { ApiConnectionError, ApiError, RateLimitError } from "./errors.js";
import { backoff, parseRetryAfter, retryWait } from "./retry.js";
// A list page of 200 deliveries is far below this; anything larger is not the API.
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
// Sent a little after the reset second so the server's clock has surely moved on.
const RESET_MARGIN = 0.05;
export class Transport {
    options;
    sleep;
    clock;
    // The last rate-limit headers seen; shared by every call on this client.
    remaining = null;
    reset = null;
    constructor(options) {
        this.options = options;
        this.sleep = options.sleep ?? ((s) => new Promise((resolve) => setTimeout(resolve, s * 1000)));
        this.clock = options.clock ?? (() => Date.now() / 1000);
    }
    async request(method, path, opts) {
        const { policy } = this.options;
        const url = new URL(this.options.baseUrl + path);
        for (const [k, v] of Object.entries(opts.query ?? {})) {
            if (v != null)
                url.searchParams.set(k, String(v));
        }
        const headers = {
            Authorization: `Bearer ${this.options.apiKey}`,
            Accept: "application/json",
            "User-Agent": this.options.userAgent,
            ...(opts.headers ?? {}),
        };
        const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
        if (body !== undefined)
            headers["Content-Type"] = "application/json";
        for (let retry = 0;; retry++) {
            await this.waitForQuota();
            const sentAt = this.clock();
            let response;
            let text;
            try {
                response = await fetch(url, {
                    method,
                    headers,
                    body,
                    signal: AbortSignal.timeout((opts.timeout ?? this.options.timeout) * 1000),
                });
                text = await readBounded(response);
            }
            catch (e) {
                this.log(method, path, retry, sentAt, null, {});
                if (opts.retrySafe && retry < policy.maxRetries) {
                    await this.sleep(backoff(retry, policy));
                    continue;
                }
                throw new ApiConnectionError(`${method} ${path}: ${e.message}`, e);
            }
            const respHeaders = Object.fromEntries(response.headers.entries());
            this.noteQuota(respHeaders);
            this.log(method, path, retry, sentAt, response.status, respHeaders);
            if (response.ok)
                return (text.trim() ? JSON.parse(text) : null);
            const [code, message] = errorOf(response.status, text);
            if (response.status === 429) {
                const after = parseRetryAfter(respHeaders["retry-after"], this.clock());
                const wait = retryWait(429, retry, after, policy);
                if (retry >= policy.maxRetries || wait > policy.maxWait) {
                    throw new RateLimitError(429, code, message, respHeaders, after);
                }
                await this.sleep(wait);
                continue;
            }
            if (response.status >= 500 && opts.retrySafe && retry < policy.maxRetries) {
                await this.sleep(backoff(retry, policy));
                continue;
            }
            throw new ApiError(response.status, code, message, respHeaders);
        }
    }
    /** Proactive: with the quota (nearly) spent, sleep until the minute resets. */
    async waitForQuota() {
        const { policy } = this.options;
        if (this.remaining == null || this.reset == null || this.remaining >= policy.rateLimitThreshold)
            return;
        const wait = this.reset - this.clock() + RESET_MARGIN;
        if (wait > 0)
            await this.sleep(Math.min(wait, policy.maxWait));
    }
    noteQuota(headers) {
        const remaining = Number(headers["x-ratelimit-remaining"]);
        const reset = Number(headers["x-ratelimit-reset"]);
        if (headers["x-ratelimit-remaining"] == null || Number.isNaN(remaining) || Number.isNaN(reset))
            return;
        this.remaining = remaining;
        this.reset = reset;
    }
    log(method, path, retry, sentAt, status, headers) {
        this.options.onResponse?.({ method, path, retry, sentAt, receivedAt: this.clock(), status, headers });
    }
}
async function readBounded(response) {
    const declared = Number(response.headers.get("content-length") ?? 0);
    if (declared > MAX_RESPONSE_BYTES)
        throw new Error(`response over ${MAX_RESPONSE_BYTES} bytes`);
    const buf = await response.arrayBuffer();
    if (buf.byteLength > MAX_RESPONSE_BYTES)
        throw new Error(`response over ${MAX_RESPONSE_BYTES} bytes`);
    return new TextDecoder().decode(buf);
}
/** The API's `{"error": {"code", "message"}}`, or something readable from a proxy. */
function errorOf(status, text) {
    try {
        const err = JSON.parse(text).error;
        if (err && typeof err.code === "string")
            return [err.code, String(err.message)];
    }
    catch {
        // not JSON: fall through
    }
    return [`http_${status}`, text.slice(0, 200).trim() || `HTTP ${status}`];
}
