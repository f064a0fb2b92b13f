/** `Client`: every operation of `/public/v1`, one property per resource. */
import { type Delivery, type DeliveryDetail, type DeliveryStatus, type Erasure, type Event, type EventAccepted, type EventTypeSchema, type Page, type Replay, type SignatureScheme, type Webhook } from "./models.js";
import { type RetryPolicy } from "./retry.js";
import { Transport, type Attempt } from "./transport.js";
export declare const VERSION = "0.1.0";
export interface ClientOptions extends Partial<RetryPolicy> {
    /** The server, e.g. `https://posthorn.example.com` (`/public/v1` is added). */
    baseUrl?: string;
    /** Seconds for one HTTP attempt, answer included. */
    timeout?: number;
    /** Called after every HTTP attempt, for logging. */
    onResponse?: (attempt: Attempt) => void;
}
type Since = string | Date | undefined;
/**
 * Posthorn's public API. Calls back off on 429 (honouring `Retry-After`), wait for the
 * minute's reset when the quota is spent, and retry 5xx and connection errors for calls
 * safe to repeat.
 */
export declare class Client {
    readonly webhooks: Webhooks;
    readonly events: Events;
    readonly deliveries: Deliveries;
    readonly replays: Replays;
    readonly erasures: Erasures;
    readonly eventTypes: EventTypes;
    /** @internal exposed for tests that replace `sleep` */
    readonly transport: Transport;
    constructor(apiKey: string, options?: ClientOptions);
}
export interface CreateWebhook {
    /** The endpoint's HTTP URL; or give `destination` instead. */
    url?: string;
    /**
     * A broker to publish to instead of `url`: `{type: "redis", url: "redis://:pw@host:6379/0",
     * stream: "orders"}` or `{type: "nats", url: "nats://host:4222", subject: "orders.paid"}`.
     * Its credentials are never returned.
     */
    destination?: Record<string, unknown>;
    /** Event types (`order.paid`) or `*`. */
    events: string[];
    description?: string;
    /** Custom headers sent with every attempt. */
    headers?: Record<string, string>;
    /** At most this many attempts per second, evenly spaced; null or absent: unlimited. */
    rate_limit?: number | null;
    /** Presented to the receiver when it asks for one (mutual TLS). */
    client_certificate?: ClientCertificateIn;
    /** `hmac-sha256` (the default) or `ed25519`: v1a signatures, checked with the answer's `public_key` (no secret). */
    signature_scheme?: SignatureScheme;
    /**
     * A CEL expression over `event`, `data` and `subjects` (at most 1024 bytes, e.g.
     * `data.amount > 1000`): an event it does not match makes no attempt for this endpoint.
     * One that does not parse or check is an `ApiError` 422 `invalid` saying where (`… at 1:14`).
     */
    filter?: string | null;
}
export interface UpdateWebhook {
    url?: string;
    /** A broker endpoint's new settings, of the same type (credentials left out are kept). */
    destination?: Record<string, unknown>;
    events?: string[];
    description?: string;
    enabled?: boolean;
    headers?: Record<string, string>;
    /** Attempts per second; null lifts the limit, absent leaves it. */
    rate_limit?: number | null;
    /** A new client certificate; null removes it, absent leaves it. */
    client_certificate?: ClientCertificateIn | null;
    /** Switches schemes (both sign for 24 hours); to `hmac-sha256`, the answer carries the new `secret`. */
    signature_scheme?: SignatureScheme;
    /** A new CEL filter; null removes it (every event of `events` is sent), absent leaves it. */
    filter?: string | null;
}
/**
 * A client certificate and its key, PEM, each at most 16 KiB. Write-only: answers show
 * `Webhook.client_certificate`. One the server refuses (expired, key not its own, …) is
 * an `ApiError` 422 `invalid`.
 */
export interface ClientCertificateIn {
    /** The certificate first, then up to 4 of its chain. */
    cert: string;
    /** Its private key (PKCS#8, RSA or EC; unencrypted). */
    key: string;
}
/** The attempts `webhooks.recover` looks at: RFC 3339 strings or `Date`s. */
export interface RecoverWindow {
    /** Attempts made at or after this time. */
    since: string | Date;
    /** Attempts made before this time, after `since`; default: now. */
    until?: string | Date;
}
/** `/webhooks`: the project's endpoints. */
export declare class Webhooks {
    private readonly t;
    constructor(t: Transport);
    /** Creates an endpoint; the answer carries its `secret`. Not retried on 5xx (a repeat could create a second one). */
    create(params: CreateWebhook): Promise<Webhook>;
    list(): Promise<Webhook[]>;
    get(id: number): Promise<Webhook>;
    /** Changes the given fields only. Retried like a GET: it sets values, so a repeat leaves the same endpoint. */
    update(id: number, params: UpdateWebhook): Promise<Webhook>;
    delete(id: number): Promise<void>;
    /** A new secret; the old one stays valid for a while. Not retried on 5xx: a repeat would rotate twice. */
    rotateSecret(id: number): Promise<Webhook>;
    /**
     * Replays, once each, the endpoint's (event, endpoint) pairs still failing among the
     * attempts made in the window: failed or dead-lettered, with no success and nothing
     * waiting. Answers the replay at once (it may be empty: `total` 0); follow it with
     * `replays.get`. Not retried on 5xx: a repeat would start a second replay.
     */
    recover(id: number, window: RecoverWindow): Promise<Replay>;
}
export interface ListEvents {
    cursor?: string;
    limit?: number;
    since?: Since;
    type?: string;
}
export interface SendOptions {
    /** Made up when absent, so a retry after a lost answer never sends the event twice. */
    idempotencyKey?: string;
    /** Events with the same key reach each endpoint one at a time, in the order accepted. */
    orderingKey?: string;
    /** The data subjects the event is about (`user:42`), at most 10, for `erasures.create`. */
    subjects?: string[];
}
/** One event of `events.sendBatch`. */
export interface EventIn {
    event: string;
    data: Record<string, unknown>;
    /** Its idempotency key (made up when absent). */
    id?: string;
    ordering_key?: string;
    /** The data subjects it is about (`user:42`), at most 10 of 1 to 255 characters. */
    subjects?: string[];
}
export interface ListDeliveries {
    cursor?: string;
    limit?: number;
    since?: Since;
    status?: DeliveryStatus;
    event_id?: string;
    ordering_key?: string;
}
/** `/events`: send events; read them back by id or by cursor; erase one's data. */
export declare class Events {
    private readonly t;
    constructor(t: Transport);
    /**
     * Stores the event and fans it out to every subscribed endpoint. An idempotency key is
     * made up when none is given, so a retry after a lost answer never sends it twice.
     * Events with the same `orderingKey` reach each endpoint one at a time, in the order
     * they were accepted. `subjects` name the data subjects the event is about, so that
     * `erasures.create(subject)` finds it.
     */
    send(event: string, data: unknown, options?: SendOptions): Promise<EventAccepted>;
    /**
     * Stores up to 100 events in one request, all or none, fanned out in order; the answers
     * are in the same order. Each costs one unit of the rate limit. Every item without an
     * `id` gets a made-up idempotency key, so a retry after a lost answer never sends one twice.
     */
    sendBatch(events: EventIn[]): Promise<EventAccepted[]>;
    get(id: string): Promise<Event>;
    /**
     * Erases the event's data and subjects and its attempts' response bodies and headers;
     * its waiting attempts become dead letters (`error_kind` `erased`). Answers null once
     * done (also for an event erased before), or the `Erasure` still running if an attempt
     * was in flight after the server's 40 s wait: it finishes when that attempt comes back
     * (`erasures.get`). Retried like a GET: a repeat erases nothing more.
     */
    eraseData(id: string): Promise<Erasure | null>;
    /** One page, oldest first. */
    list(params?: ListEvents): Promise<Page<Event>>;
    /** Every event from `cursor` (or the beginning) on, each exactly once: `for await (const e of …)`. */
    iter(params?: Omit<ListEvents, "limit"> & {
        pageSize?: number;
    }): CursorIterator<Event>;
}
/** `/deliveries`: every attempt; manual retry. */
export declare class Deliveries {
    private readonly t;
    constructor(t: Transport);
    list(params?: ListDeliveries): Promise<Page<Delivery>>;
    iter(params?: Omit<ListDeliveries, "limit"> & {
        pageSize?: number;
    }): CursorIterator<Delivery>;
    get(id: number): Promise<DeliveryDetail>;
    /** Sends the event again as a new attempt. Not retried on 5xx: a repeat would queue a second one. */
    retry(id: number): Promise<Delivery>;
}
/** `/replays`: follow or cancel a replay started by `webhooks.recover`. */
export declare class Replays {
    private readonly t;
    constructor(t: Transport);
    get(id: number): Promise<Replay>;
    /**
     * Stops the replay (what it queued already stays queued) and answers it: `cancelled`,
     * or unchanged if it had finished. Retried like a GET: a repeat leaves the same replay.
     */
    cancel(id: number): Promise<Replay>;
}
/** `/erasures`: erase every event that names a data subject; follow an erasure. */
export declare class Erasures {
    private readonly t;
    constructor(t: Transport);
    /**
     * Erases, in the background, every event of the project accepted until now whose
     * `subjects` name `subject`, as `events.eraseData` does one; answers the erasure at once
     * (`running`), which `get` follows until it is `done`. Counts against the project's
     * `concurrent_erasures` (ApiError 422 `limit_reached`). Not retried on 5xx: a repeat
     * would start a second erasure.
     */
    create(subject: string): Promise<Erasure>;
    get(id: number): Promise<Erasure>;
}
/**
 * `/event-types/{type}/schema`: a JSON Schema per event type, which the `data` of its
 * events must pass.
 */
export declare class EventTypes {
    private readonly t;
    constructor(t: Transport);
    /**
     * Sets (or replaces) the JSON Schema (draft 2020-12) that the `data` of every event of
     * `type` sent from now on must pass: `events.send` and `events.sendBatch` reject one that
     * fails it with an `ApiError` 422 `invalid`, its `apiMessage` naming the path and the rule
     * (`data.amount: 0 is less than the minimum of 1 (rule …)`; in a batch prefixed
     * `events[1].`). Answers it with its `version` (1, then one more at every change).
     * `$ref` resolves only within the schema (`#…`; a remote one is refused), `format` is
     * asserted. Refused: `ApiError` 422 `invalid` for a schema the server does not accept
     * (its message says where), 413 `too_large` over 64 KiB, 422 `limit_reached` past 200
     * schemas per project. Retried like a GET: a repeat leaves the same schema (its version
     * one more).
     */
    setSchema(type: string, schema: Record<string, unknown>): Promise<EventTypeSchema>;
    /** The schema as set; an `ApiError` 404 `not_found` when the type has none. */
    getSchema(type: string): Promise<Record<string, unknown>>;
    /** Removes the type's schema: its events are no longer checked. An `ApiError` 404 `not_found` when it has none. */
    deleteSchema(type: string): Promise<void>;
}
/**
 * Items of every page in turn (`for await`). `cursor` is where the pages read so far end:
 * store it and pass it to `iter({ cursor })` later to go on from there.
 */
export declare class CursorIterator<T> implements AsyncIterableIterator<T> {
    private readonly fetchPage;
    cursor: string | undefined;
    private buffer;
    private done;
    constructor(fetchPage: (cursor: string | undefined) => Promise<Page<T>>, cursor?: string);
    [Symbol.asyncIterator](): this;
    next(): Promise<IteratorResult<T>>;
    /** All remaining items in an array (bounded lists only). */
    toArray(): Promise<T[]>;
}
export {};
