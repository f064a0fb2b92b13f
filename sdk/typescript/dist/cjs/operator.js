"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.PortalLinks = exports.UsageReports = exports.ApiKeys = exports.Projects = exports.Operator = void 0;
/**
 * `Operator`: every operation of `/operator/v1`, the API of the platform that runs
 * Posthorn for its customers: their projects, the projects' API keys, usage and portal links.
 */
const client_js_1 = require("./client.js");
const models_js_1 = require("./models.js");
const retry_js_1 = require("./retry.js");
const transport_js_1 = require("./transport.js");
const DEFAULT_BASE_URL = "http://127.0.0.1:3000";
/**
 * Posthorn's operator API, authenticated by an operator key (`pho_…`, made by
 * `posthorn create-operator-key`). Retries as `Client` does: 429s wait out `Retry-After`;
 * 5xx and connection errors are retried only for calls safe to repeat (GET, PATCH, DELETE).
 *
 *     const op = new Operator("pho_…", { baseUrl: "https://posthorn.example.com" });
 *     const project = await op.projects.create({ name: "Acme", uid: "customer-42" });
 */
class Operator {
    projects;
    apiKeys;
    usage;
    portalLinks;
    /** @internal exposed for tests that replace `sleep` */
    transport;
    constructor(operatorKey, options = {}) {
        if (!operatorKey)
            throw new TypeError("operatorKey is required");
        let base = (options.baseUrl ?? process.env.POSTHORN_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
        if (!base.endsWith("/operator/v1"))
            base += "/operator/v1";
        const policy = { ...retry_js_1.DEFAULT_POLICY };
        for (const key of ["maxRetries", "backoffBase", "backoffCap", "maxWait"]) {
            if (options[key] !== undefined)
                policy[key] = options[key];
        }
        this.transport = new transport_js_1.Transport({
            apiKey: operatorKey,
            baseUrl: base,
            timeout: options.timeout ?? 30,
            policy,
            userAgent: `posthorn-node/${client_js_1.VERSION}`,
            onResponse: options.onResponse,
        });
        this.projects = new Projects(this.transport);
        this.apiKeys = new ApiKeys(this.transport);
        this.usage = new UsageReports(this.transport);
        this.portalLinks = new PortalLinks(this.transport);
    }
}
exports.Operator = Operator;
const path = (...parts) => parts.map((p) => "/" + encodeURIComponent(String(p))).join("");
/** `/projects`: the operator's customers, one project each. */
class Projects {
    t;
    constructor(t) {
        this.t = t;
    }
    /** Creates a project. Not retried on 5xx: a repeat could create two. */
    async create(params) {
        return (0, models_js_1.decode)(await this.t.request("POST", "/projects", { body: params, retrySafe: false }));
    }
    /** One page of live projects, oldest first. */
    async list(params = {}) {
        const body = await this.t.request("GET", "/projects", { query: { ...params }, retrySafe: true });
        return {
            data: body.data.map((p) => (0, models_js_1.decode)(p)),
            has_more: Boolean(body.has_more),
            next_cursor: body.next_cursor,
        };
    }
    /** Every live project from `cursor` (or the beginning) on, each exactly once: `for await (const p of …)`. */
    iter(params = {}) {
        const { pageSize = 100, ...rest } = params;
        return new client_js_1.CursorIterator((cursor) => this.list({ ...rest, cursor, limit: pageSize }), rest.cursor);
    }
    /** The live project that carries the operator's id `uid`, or null. */
    async find(uid) {
        const page = await this.list({ uid, limit: 1 });
        return page.data[0] ?? null;
    }
    async get(id) {
        return (0, models_js_1.decode)(await this.t.request("GET", path("projects", id), { retrySafe: true }));
    }
    /** Changes the given fields only. Retried like a GET: it sets values, so a repeat leaves the same project. */
    async update(id, params) {
        return (0, models_js_1.decode)(await this.t.request("PATCH", path("projects", id), { body: params, retrySafe: true }));
    }
    /**
     * The project is gone at once: its id answers 404, its keys and portal sessions stop
     * working, nothing more is sent for it; its data is purged in the background.
     */
    async delete(id) {
        await this.t.request("DELETE", path("projects", id), { retrySafe: true });
    }
}
exports.Projects = Projects;
/** `/projects/{id}/api-keys`: the projects' public API keys. */
class ApiKeys {
    t;
    constructor(t) {
        this.t = t;
    }
    /** Mints a public API key (`phk_…`); `key` is shown this once. Not retried on 5xx: a repeat would mint two. */
    async create(projectId, name) {
        return (0, models_js_1.decode)(await this.t.request("POST", path("projects", projectId, "api-keys"), { body: { name }, retrySafe: false }));
    }
    /** The key stops working at once (the public API answers it 401). */
    async revoke(projectId, keyId) {
        await this.t.request("DELETE", path("projects", projectId, "api-keys", keyId), { retrySafe: true });
    }
}
exports.ApiKeys = ApiKeys;
/** A UTC day: `YYYY-MM-DD` as given, or a `Date`'s UTC day. */
const day = (value) => (value instanceof Date ? value.toISOString().slice(0, 10) : value);
/** `/projects/{id}/usage`: what a project used per UTC day, for billing. */
class UsageReports {
    t;
    constructor(t) {
        this.t = t;
    }
    async get(projectId, range = {}) {
        const query = { since: day(range.since), until: day(range.until) };
        return (0, models_js_1.decode)(await this.t.request("GET", path("projects", projectId, "usage"), { query, retrySafe: true }));
    }
}
exports.UsageReports = UsageReports;
/** `/projects/{id}/portal-links`: single-use sign-in links into a project's portal. */
class PortalLinks {
    t;
    constructor(t) {
        this.t = t;
    }
    /** Not retried on 5xx: a repeat would make a second link. */
    async create(projectId, params) {
        return (0, models_js_1.decode)(await this.t.request("POST", path("projects", projectId, "portal-links"), { body: params, retrySafe: false }));
    }
}
exports.PortalLinks = PortalLinks;
