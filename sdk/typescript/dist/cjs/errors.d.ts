/** Errors of the API client. Verification errors live in `webhooks.ts`. */
/** Base of every error the API client throws. */
export declare class PosthornError extends Error {
    constructor(message: string);
}
/** The API answered with an error: `{"error": {"code", "message"}}` and its status. */
export declare class ApiError extends PosthornError {
    readonly status: number;
    readonly code: string;
    readonly headers: Record<string, string>;
    /** The API's own message (the error's `message` also carries status and code). */
    readonly apiMessage: string;
    constructor(status: number, code: string, message: string, headers?: Record<string, string>);
}
/** A 429 the client gave up on (retries spent, or a wait longer than `maxWait`). */
export declare class RateLimitError extends ApiError {
    /** Seconds the server asked to wait, when it said. */
    readonly retryAfter: number | null;
    constructor(status: number, code: string, message: string, headers: Record<string, string>, retryAfter: number | null);
}
/** No answer: connection refused or reset, DNS failure, or timeout. */
export declare class ApiConnectionError extends PosthornError {
    readonly cause: unknown;
    constructor(message: string, cause: unknown);
}
