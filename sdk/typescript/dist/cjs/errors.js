"use strict";
/** Errors of the API client. Verification errors live in `webhooks.ts`. */
Object.defineProperty(exports, "__esModule", { value: true });
exports.ApiConnectionError = exports.RateLimitError = exports.ApiError = exports.PosthornError = void 0;
/** Base of every error the API client throws. */
class PosthornError extends Error {
    constructor(message) {
        super(message);
        this.name = new.target.name;
    }
}
exports.PosthornError = PosthornError;
/** The API answered with an error: `{"error": {"code", "message"}}` and its status. */
class ApiError extends PosthornError {
    status;
    code;
    headers;
    /** The API's own message (the error's `message` also carries status and code). */
    apiMessage;
    constructor(status, code, message, headers = {}) {
        super(`${status} ${code}: ${message}`);
        this.status = status;
        this.code = code;
        this.apiMessage = message;
        this.headers = headers;
    }
}
exports.ApiError = ApiError;
/** A 429 the client gave up on (retries spent, or a wait longer than `maxWait`). */
class RateLimitError extends ApiError {
    /** Seconds the server asked to wait, when it said. */
    retryAfter;
    constructor(status, code, message, headers, retryAfter) {
        super(status, code, message, headers);
        this.retryAfter = retryAfter;
    }
}
exports.RateLimitError = RateLimitError;
/** No answer: connection refused or reset, DNS failure, or timeout. */
class ApiConnectionError extends PosthornError {
    cause;
    constructor(message, cause) {
        super(message);
        this.cause = cause;
    }
}
exports.ApiConnectionError = ApiConnectionError;
