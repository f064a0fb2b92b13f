/**
 * Posthorn: verify webhooks, call the public API with backoff, page through lists, and
 * run projects for customers through the operator API.
 *
 *     import { verify, WebhookVerificationError, Client, Operator } from "@posthorn/sdk";
 */
export { verify, sign, WebhookVerificationError, InvalidSignatureError, InvalidTimestampError, MissingHeadersError, DEFAULT_TOLERANCE, } from "./webhooks.js";
export { Client, CursorIterator, Webhooks, Events, Deliveries, Replays, Erasures, EventTypes, VERSION } from "./client.js";
export { Operator, Projects, ApiKeys, UsageReports, PortalLinks } from "./operator.js";
export { PosthornError, ApiError, RateLimitError, ApiConnectionError } from "./errors.js";
export { backoff, parseRetryAfter, retryWait, DEFAULT_POLICY } from "./retry.js";
