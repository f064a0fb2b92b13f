"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CursorIterator = exports.EventTypes = exports.Erasures = exports.Replays = exports.Deliveries = exports.Events = exports.Webhooks = exports.Client = exports.VERSION = void 0;
/** `Client`: every operation of `/public/v1`, one property per resource. */
const models_js_1 = require("./models.js");
const retry_js_1 = require("./retry.js");
const transport_js_1 = require("./transport.js");
const node_crypto_1 = require("node:crypto");
exports.VERSION = "0.1.0";
const DEFAULT_BASE_URL = "http://127.0.0.1:3000";
// `events.eraseData` may wait 40 s on the server for attempts in flight before answering.
const ERASE_TIMEOUT = 60;
/**
 * Posthorn's public API. Calls back off on 429 (honouring `Retry-After`), wait for the
 * minute's reset when the quota is spent, and retry 5xx and connection errors for calls
 * safe to repeat.
 */
class Client {
    webhooks;
    events;
    deliveries;
    replays;
    erasures;
    eventTypes;
    /** @internal exposed for tests that replace `sleep` */
    transport;
    constructor(apiKey, options = {}) {
        if (!apiKey)
            throw new TypeError("apiKey is required");
        let base = (options.baseUrl ?? process.env.POSTHORN_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
        if (!base.endsWith("/public/v1"))
            base += "/public/v1";
        const policy = { ...retry_js_1.DEFAULT_POLICY };
        for (const key of Object.keys(retry_js_1.DEFAULT_POLICY)) {
            if (options[key] !== undefined)
                policy[key] = options[key];
        }
        this.transport = new transport_js_1.Transport({
            apiKey,
            baseUrl: base,
            timeout: options.timeout ?? 30,
            policy,
            userAgent: `posthorn-node/${exports.VERSION}`,
            onResponse: options.onResponse,
        });
        this.webhooks = new Webhooks(this.transport);
        this.events = new Events(this.transport);
        this.deliveries = new Deliveries(this.transport);
        this.replays = new Replays(this.transport);
        this.erasures = new Erasures(this.transport);
        this.eventTypes = new EventTypes(this.transport);
    }
}
exports.Client = Client;
const path = (...parts) => parts.map((p) => "/" + encodeURIComponent(String(p))).join("");
const since = (value) => (value instanceof Date ? value.toISOString() : value);
/** `/webhooks`: the project's endpoints. */
class Webhooks {
    t;
    constructor(t) {
        this.t = t;
    }
    /** Creates an endpoint; the answer carries its `secret`. Not retried on 5xx (a repeat could create a second one). */
    async create(params) {
        return (0, models_js_1.decode)(await this.t.request("POST", "/webhooks", { body: params, retrySafe: false }));
    }
    async list() {
        const body = await this.t.request("GET", "/webhooks", { retrySafe: true });
        return body.data.map((w) => (0, models_js_1.decode)(w));
    }
    async get(id) {
        return (0, models_js_1.decode)(await this.t.request("GET", path("webhooks", id), { retrySafe: true }));
    }
    /** Changes the given fields only. Retried like a GET: it sets values, so a repeat leaves the same endpoint. */
    async update(id, params) {
        return (0, models_js_1.decode)(await this.t.request("PATCH", path("webhooks", id), { body: params, retrySafe: true }));
    }
    async delete(id) {
        await this.t.request("DELETE", path("webhooks", id), { retrySafe: true });
    }
    /** A new secret; the old one stays valid for a while. Not retried on 5xx: a repeat would rotate twice. */
    async rotateSecret(id) {
        return (0, models_js_1.decode)(await this.t.request("POST", path("webhooks", id, "rotate-secret"), { retrySafe: false }));
    }
    /**
     * Replays, once each, the endpoint's (event, endpoint) pairs still failing among the
     * attempts made in the window: failed or dead-lettered, with no success and nothing
     * waiting. Answers the replay at once (it may be empty: `total` 0); follow it with
     * `replays.get`. Not retried on 5xx: a repeat would start a second replay.
     */
    async recover(id, window) {
        const body = { since: since(window.since) };
        if (window.until !== undefined)
            body.until = since(window.until);
        return (0, models_js_1.decode)(await this.t.request("POST", path("webhooks", id, "recover"), { body, retrySafe: false }));
    }
}
exports.Webhooks = Webhooks;
/** `/events`: send events; read them back by id or by cursor; erase one's data. */
class Events {
    t;
    constructor(t) {
        this.t = t;
    }
    /**
     * Stores the event and fans it out to every subscribed endpoint. An idempotency key is
     * made up when none is given, so a retry after a lost answer never sends it twice.
     * Events with the same `orderingKey` reach each endpoint one at a time, in the order
     * they were accepted. `subjects` name the data subjects the event is about, so that
     * `erasures.create(subject)` finds it.
     */
    async send(event, data, options = {}) {
        const key = options.idempotencyKey || `phk-${(0, node_crypto_1.randomUUID)()}`;
        const body = { event, data };
        if (options.orderingKey !== undefined)
            body.ordering_key = options.orderingKey;
        if (options.subjects !== undefined)
            body.subjects = options.subjects;
        return (0, models_js_1.decode)(await this.t.request("POST", "/events", {
            body,
            headers: { "Idempotency-Key": key },
            retrySafe: true,
        }));
    }
    /**
     * Stores up to 100 events in one request, all or none, fanned out in order; the answers
     * are in the same order. Each costs one unit of the rate limit. Every item without an
     * `id` gets a made-up idempotency key, so a retry after a lost answer never sends one twice.
     */
    async sendBatch(events) {
        const items = events.map((e) => ({ ...e, id: e.id || `phk-${(0, node_crypto_1.randomUUID)()}` }));
        const body = await this.t.request("POST", "/events/batch", { body: { events: items }, retrySafe: true });
        return body.data.map((a) => (0, models_js_1.decode)(a));
    }
    async get(id) {
        return (0, models_js_1.decode)(await this.t.request("GET", path("events", id), { retrySafe: true }));
    }
    /**
     * Erases the event's data and subjects and its attempts' response bodies and headers;
     * its waiting attempts become dead letters (`error_kind` `erased`). Answers null once
     * done (also for an event erased before), or the `Erasure` still running if an attempt
     * was in flight after the server's 40 s wait: it finishes when that attempt comes back
     * (`erasures.get`). Retried like a GET: a repeat erases nothing more.
     */
    async eraseData(id) {
        const body = await this.t.request("DELETE", path("events", id, "data"), {
            retrySafe: true,
            timeout: Math.max(this.t.options.timeout, ERASE_TIMEOUT),
        });
        return body === null ? null : (0, models_js_1.decode)(body);
    }
    /** One page, oldest first. */
    async list(params = {}) {
        return page(this.t, "/events", { ...params, since: since(params.since) });
    }
    /** Every event from `cursor` (or the beginning) on, each exactly once: `for await (const e of …)`. */
    iter(params = {}) {
        const { pageSize = 100, ...rest } = params;
        return new CursorIterator((cursor) => this.list({ ...rest, cursor, limit: pageSize }), rest.cursor);
    }
}
exports.Events = Events;
/** `/deliveries`: every attempt; manual retry. */
class Deliveries {
    t;
    constructor(t) {
        this.t = t;
    }
    async list(params = {}) {
        return page(this.t, "/deliveries", { ...params, since: since(params.since) });
    }
    iter(params = {}) {
        const { pageSize = 100, ...rest } = params;
        return new CursorIterator((cursor) => this.list({ ...rest, cursor, limit: pageSize }), rest.cursor);
    }
    async get(id) {
        return (0, models_js_1.decode)(await this.t.request("GET", path("deliveries", id), { retrySafe: true }));
    }
    /** Sends the event again as a new attempt. Not retried on 5xx: a repeat would queue a second one. */
    async retry(id) {
        return (0, models_js_1.decode)(await this.t.request("POST", path("deliveries", id, "retry"), { retrySafe: false }));
    }
}
exports.Deliveries = Deliveries;
/** `/replays`: follow or cancel a replay started by `webhooks.recover`. */
class Replays {
    t;
    constructor(t) {
        this.t = t;
    }
    async get(id) {
        return (0, models_js_1.decode)(await this.t.request("GET", path("replays", id), { retrySafe: true }));
    }
    /**
     * Stops the replay (what it queued already stays queued) and answers it: `cancelled`,
     * or unchanged if it had finished. Retried like a GET: a repeat leaves the same replay.
     */
    async cancel(id) {
        return (0, models_js_1.decode)(await this.t.request("POST", path("replays", id, "cancel"), { retrySafe: true }));
    }
}
exports.Replays = Replays;
/** `/erasures`: erase every event that names a data subject; follow an erasure. */
class Erasures {
    t;
    constructor(t) {
        this.t = t;
    }
    /**
     * Erases, in the background, every event of the project accepted until now whose
     * `subjects` name `subject`, as `events.eraseData` does one; answers the erasure at once
     * (`running`), which `get` follows until it is `done`. Counts against the project's
     * `concurrent_erasures` (ApiError 422 `limit_reached`). Not retried on 5xx: a repeat
     * would start a second erasure.
     */
    async create(subject) {
        return (0, models_js_1.decode)(await this.t.request("POST", "/erasures", { body: { subject }, retrySafe: false }));
    }
    async get(id) {
        return (0, models_js_1.decode)(await this.t.request("GET", path("erasures", id), { retrySafe: true }));
    }
}
exports.Erasures = Erasures;
/**
 * `/event-types/{type}/schema`: a JSON Schema per event type, which the `data` of its
 * events must pass.
 */
class EventTypes {
    t;
    constructor(t) {
        this.t = t;
    }
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
    async setSchema(type, schema) {
        return (0, models_js_1.decode)(await this.t.request("PUT", path("event-types", type, "schema"), { body: schema, retrySafe: true }));
    }
    /** The schema as set; an `ApiError` 404 `not_found` when the type has none. */
    async getSchema(type) {
        return await this.t.request("GET", path("event-types", type, "schema"), { retrySafe: true });
    }
    /** Removes the type's schema: its events are no longer checked. An `ApiError` 404 `not_found` when it has none. */
    async deleteSchema(type) {
        await this.t.request("DELETE", path("event-types", type, "schema"), { retrySafe: true });
    }
}
exports.EventTypes = EventTypes;
async function page(t, p, query) {
    const body = await t.request("GET", p, { query, retrySafe: true });
    return {
        data: body.data.map((item) => (0, models_js_1.decode)(item)),
        has_more: Boolean(body.meta.has_more),
        next_cursor: body.meta.next_cursor,
    };
}
/**
 * Items of every page in turn (`for await`). `cursor` is where the pages read so far end:
 * store it and pass it to `iter({ cursor })` later to go on from there.
 */
class CursorIterator {
    fetchPage;
    cursor;
    buffer = [];
    done = false;
    constructor(fetchPage, cursor) {
        this.fetchPage = fetchPage;
        this.cursor = cursor;
    }
    [Symbol.asyncIterator]() {
        return this;
    }
    async next() {
        while (this.buffer.length === 0) {
            if (this.done)
                return { done: true, value: undefined };
            const p = await this.fetchPage(this.cursor);
            this.buffer = [...p.data];
            this.cursor = p.next_cursor;
            this.done = !p.has_more;
        }
        return { done: false, value: this.buffer.shift() };
    }
    /** All remaining items in an array (bounded lists only). */
    async toArray() {
        const out = [];
        for await (const item of this)
            out.push(item);
        return out;
    }
}
exports.CursorIterator = CursorIterator;
