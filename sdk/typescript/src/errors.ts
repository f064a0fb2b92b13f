/** Errors of the API client. Verification errors live in `webhooks.ts`. */

/** Base of every error the API client throws. */
export class PosthornError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The API answered with an error: `{"error": {"code", "message"}}` and its status. */
export class ApiError extends PosthornError {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;
  /** The API's own message (the error's `message` also carries status and code). */
  readonly apiMessage: string;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.apiMessage = message;
    this.headers = headers;
  }
}

/** A 429 the client gave up on (retries spent, or a wait longer than `maxWait`). */
export class RateLimitError extends ApiError {
  /** Seconds the server asked to wait, when it said. */
  readonly retryAfter: number | null;

  constructor(status: number, code: string, message: string, headers: Record<string, string>, retryAfter: number | null) {
    super(status, code, message, headers);
    this.retryAfter = retryAfter;
  }
}

/** No answer: connection refused or reset, DNS failure, or timeout. */
export class ApiConnectionError extends PosthornError {
  readonly cause: unknown;

  constructor(message: string, cause: unknown) {
    super(message);
    this.cause = cause;
  }
}
