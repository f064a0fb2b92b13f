/**
 * Posthorn: verify webhooks, call the public API with backoff, page through lists, and
 * run projects for customers through the operator API.
 *
 *     import { verify, WebhookVerificationError, Client, Operator } from "@posthorn/sdk";
 */
export { verify, sign, WebhookVerificationError, InvalidSignatureError, InvalidTimestampError, MissingHeadersError, DEFAULT_TOLERANCE, type HeadersLike, } from "./webhooks.js";
export { Client, CursorIterator, Webhooks, Events, Deliveries, Replays, Erasures, EventTypes, VERSION } from "./client.js";
export type { ClientOptions, CreateWebhook, UpdateWebhook, ClientCertificateIn, SendOptions, EventIn, ListEvents, ListDeliveries, RecoverWindow, } from "./client.js";
export { Operator, Projects, ApiKeys, UsageReports, PortalLinks } from "./operator.js";
export type { OperatorOptions, CreateProject, UpdateProject, ListProjects, LimitOverrides, BrandIn, UsageRange, CreatePortalLink, PortalRole, } from "./operator.js";
export { PosthornError, ApiError, RateLimitError, ApiConnectionError } from "./errors.js";
export { backoff, parseRetryAfter, retryWait, DEFAULT_POLICY, type RetryPolicy } from "./retry.js";
export type { Attempt } from "./transport.js";
export type { Webhook, SignatureScheme, ClientCertificate, Destination, EventAccepted, Event, FilteredOut, Delivery, DeliveryDetail, DeliveryStatus, DeliveryTrigger, Replay, ReplayStatus, Erasure, ErasureStatus, EventTypeSchema, Page, Project, Plan, EffectiveLimits, Brand, CreatedKey, Usage, UsageDay, AttemptCounts, PortalLink, } from "./models.js";
