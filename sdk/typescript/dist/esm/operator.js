/**
 * `Operator`: every operation of `/operator/v1`, the API of the platform that runs
 * Posthorn for its customers: their projects, the projects' API keys, usage and portal links.
 */
import { CursorIterator, VERSION } from "./client.js";
import { decode } from "./models.js";
import { DEFAULT_POLICY } from "./retry.js";
import { Transport } from "./transport.js";
const DEFAULT_BASE_URL = "http://127.0.0.1:3000";
/**
 * Posthorn's operator API, authenticated by an operator key (`pho_…`, made by
 * `posthorn create-operator-key`). Retries as `Client` does: 429s wait out `Retry-After`;
 * 5xx and connection errors are retried only for calls safe to repeat (GET, PATCH, DELETE).
 *
 *     const op = new Operator("pho_…", { baseUrl: "https://posthorn.example.com" });
 *     const project = await op.projects.create({ name: "Acme", uid: "customer-42" });
 */
export class Operator {
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
        const policy = { ...DEFAULT_POLICY };
        for (const key of ["maxRetries", "backoffBase", "backoffCap", "maxWait"]) {
            if (options[key] !== undefined)
                policy[key] = options[key];
        }
        this.transport = new Transport({
            apiKey: operatorKey,
            baseUrl: base,
            timeout: options.timeout ?? 30,
            policy,
            userAgent: `posthorn-node/${VERSION}`,
            onResponse: options.onResponse,
        });
        this.projects = new Projects(this.transport);
        this.apiKeys = new ApiKeys(this.transport);
        this.usage = new UsageReports(this.transport);
        this.portalLinks = new PortalLinks(this.transport);
    }
}
const path = (...parts) => parts.map((p) => "/" + encodeURIComponent(String(p))).join("");
/** `/projects`: the operator's customers, one project each. */
export class Projects {
    t;
    constructor(t) {
        this.t = t;
    }
    /** Creates a project. Not retried on 5xx: a repeat could create two. */
    async create(params) {
        return decode(await this.t.request("POST", "/projects", { body: params, retrySafe: false }));
    }
    /** One page of live projects, oldest first. */
    async list(params = {}) {
        const body = await this.t.request("GET", "/projects", { query: { ...params }, retrySafe: true });
        return {
            data: body.data.map((p) => decode(p)),
            has_more: Boolean(body.has_more),
            next_cursor: body.next_cursor,
        };
    }
    /** Every live project from `cursor` (or the beginning) on, each exactly once: `for await (const p of …)`. */
    iter(params = {}) {
        const { pageSize = 100, ...rest } = params;
        return new CursorIterator((cursor) => this.list({ ...rest, cursor, limit: pageSize }), rest.cursor);
    }
    /** The live project that carries the operator's id `uid`, or null. */
    async find(uid) {
        const page = await this.list({ uid, limit: 1 });
        return page.data[0] ?? null;
    }
    async get(id) {
        return decode(await this.t.request("GET", path("projects", id), { retrySafe: true }));
    }
    /** Changes the given fields only. Retried like a GET: it sets values, so a repeat leaves the same project. */
    async update(id, params) {
        return decode(await this.t.request("PATCH", path("projects", id), { body: params, retrySafe: true }));
    }
    /**
     * The project is gone at once: its id answers 404, its keys and portal sessions stop
     * working, nothing more is sent for it; its data is purged in the background.
     */
    async delete(id) {
        await this.t.request("DELETE", path("projects", id), { retrySafe: true });
    }
}
/** `/projects/{id}/api-keys`: the projects' public API keys. */
export class ApiKeys {
    t;
    constructor(t) {
        this.t = t;
    }
    /** Mints a public API key (`phk_…`); `key` is shown this once. Not retried on 5xx: a repeat would mint two. */
    async create(projectId, name) {
        return decode(await this.t.request("POST", path("projects", projectId, "api-keys"), { body: { name }, retrySafe: false }));
    }
    /** The key stops working at once (the public API answers it 401). */
    async revoke(projectId, keyId) {
        await this.t.request("DELETE", path("projects", projectId, "api-keys", keyId), { retrySafe: true });
    }
}
/** A UTC day: `YYYY-MM-DD` as given, or a `Date`'s UTC day. */
const day = (value) => (value instanceof Date ? value.toISOString().slice(0, 10) : value);
/** `/projects/{id}/usage`: what a project used per UTC day, for billing. */
export class UsageReports {
    t;
    constructor(t) {
        this.t = t;
    }
    async get(projectId, range = {}) {
        const query = { since: day(range.since), until: day(range.until) };
        return decode(await this.t.request("GET", path("projects", projectId, "usage"), { query, retrySafe: true }));
    }
}
/** `/projects/{id}/portal-links`: single-use sign-in links into a project's portal. */
export class PortalLinks {
    t;
    constructor(t) {
        this.t = t;
    }
    /** Not retried on 5xx: a repeat would make a second link. */
    async create(projectId, params) {
        return decode(await this.t.request("POST", path("projects", projectId, "portal-links"), { body: params, retrySafe: false }));
    }
}
