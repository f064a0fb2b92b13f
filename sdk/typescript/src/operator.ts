/**
 * `Operator`: every operation of `/operator/v1`, the API of the platform that runs
 * Posthorn for its customers: their projects, the projects' API keys, usage and portal links.
 */
import { CursorIterator, VERSION } from "./client.js";
import { decode, type CreatedKey, type Page, type Plan, type PortalLink, type Project, type Usage } from "./models.js";
import { DEFAULT_POLICY, type RetryPolicy } from "./retry.js";
import { Transport, type Attempt } from "./transport.js";

const DEFAULT_BASE_URL = "http://127.0.0.1:3000";

export interface OperatorOptions extends Partial<Omit<RetryPolicy, "rateLimitThreshold">> {
  /** The server, e.g. `https://posthorn.example.com` (`/operator/v1` is added). */
  baseUrl?: string;
  /** Seconds for one HTTP attempt, answer included. */
  timeout?: number;
  /** Called after every HTTP attempt, for logging. */
  onResponse?: (attempt: Attempt) => void;
}

/**
 * Posthorn's operator API, authenticated by an operator key (`pho_…`, made by
 * `posthorn create-operator-key`). Retries as `Client` does: 429s wait out `Retry-After`;
 * 5xx and connection errors are retried only for calls safe to repeat (GET, PATCH, DELETE).
 *
 *     const op = new Operator("pho_…", { baseUrl: "https://posthorn.example.com" });
 *     const project = await op.projects.create({ name: "Acme", uid: "customer-42" });
 */
export class Operator {
  readonly projects: Projects;
  readonly apiKeys: ApiKeys;
  readonly usage: UsageReports;
  readonly portalLinks: PortalLinks;
  /** @internal exposed for tests that replace `sleep` */
  readonly transport: Transport;

  constructor(operatorKey: string, options: OperatorOptions = {}) {
    if (!operatorKey) throw new TypeError("operatorKey is required");
    let base = (options.baseUrl ?? process.env.POSTHORN_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    if (!base.endsWith("/operator/v1")) base += "/operator/v1";
    const policy: RetryPolicy = { ...DEFAULT_POLICY };
    for (const key of ["maxRetries", "backoffBase", "backoffCap", "maxWait"] as const) {
      if (options[key] !== undefined) policy[key] = options[key]!;
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

const path = (...parts: (string | number)[]) => parts.map((p) => "/" + encodeURIComponent(String(p))).join("");

/** The operator's overrides of a project's limits, each from 1 to its ceiling. */
export interface LimitOverrides {
  endpoints?: number;
  api_keys?: number;
  members?: number;
  event_types_per_endpoint?: number;
  concurrent_replays?: number;
  data_depth?: number;
  /** Erasures by subject running at once (1 to 100). */
  concurrent_erasures?: number;
  /** Public API requests per key per minute, instead of the plan's. */
  api_requests_per_minute?: number;
  /** Days of delivery history kept, at most the server's `POSTHORN_RETENTION_DAYS`. */
  retention_days?: number;
}

export interface BrandIn {
  /** The name the portal shows instead of the project's. */
  name?: string;
  /** The portal's accent colour, `#rrggbb`. */
  accent?: string;
  /** An https image the portal shows in its header. */
  logo_url?: string;
}

export interface CreateProject {
  name: string;
  /** The operator's own id for this customer: unique among live projects (else 409). */
  uid?: string;
  /** `trial` (the default) or `business`. */
  plan?: Plan;
  limits?: LimitOverrides;
  /** Origins that may frame the portal: `https://host[:port]`, or `http://localhost`. */
  frame_ancestors?: string[];
  brand?: BrandIn;
  /** Pass W3C trace context on to the project's receivers (default true). */
  trace_propagation?: boolean;
}

/** Any subset; `limits`, `frame_ancestors` and `brand` each replace the old value whole. */
export type UpdateProject = Partial<CreateProject>;

export interface ListProjects {
  cursor?: string;
  /** 1 to 200, default 50. */
  limit?: number;
  /** The operator's id: the one project that carries it, if any. */
  uid?: string;
}

/** `/projects`: the operator's customers, one project each. */
export class Projects {
  constructor(private readonly t: Transport) {}

  /** Creates a project. Not retried on 5xx: a repeat could create two. */
  async create(params: CreateProject): Promise<Project> {
    return decode(await this.t.request("POST", "/projects", { body: params, retrySafe: false }));
  }

  /** One page of live projects, oldest first. */
  async list(params: ListProjects = {}): Promise<Page<Project>> {
    const body = await this.t.request("GET", "/projects", { query: { ...params }, retrySafe: true });
    return {
      data: body.data.map((p: unknown) => decode<Project>(p)),
      has_more: Boolean(body.has_more),
      next_cursor: body.next_cursor,
    };
  }

  /** Every live project from `cursor` (or the beginning) on, each exactly once: `for await (const p of …)`. */
  iter(params: Omit<ListProjects, "limit"> & { pageSize?: number } = {}): CursorIterator<Project> {
    const { pageSize = 100, ...rest } = params;
    return new CursorIterator((cursor) => this.list({ ...rest, cursor, limit: pageSize }), rest.cursor);
  }

  /** The live project that carries the operator's id `uid`, or null. */
  async find(uid: string): Promise<Project | null> {
    const page = await this.list({ uid, limit: 1 });
    return page.data[0] ?? null;
  }

  async get(id: number): Promise<Project> {
    return decode(await this.t.request("GET", path("projects", id), { retrySafe: true }));
  }

  /** Changes the given fields only. Retried like a GET: it sets values, so a repeat leaves the same project. */
  async update(id: number, params: UpdateProject): Promise<Project> {
    return decode(await this.t.request("PATCH", path("projects", id), { body: params, retrySafe: true }));
  }

  /**
   * The project is gone at once: its id answers 404, its keys and portal sessions stop
   * working, nothing more is sent for it; its data is purged in the background.
   */
  async delete(id: number): Promise<void> {
    await this.t.request("DELETE", path("projects", id), { retrySafe: true });
  }
}

/** `/projects/{id}/api-keys`: the projects' public API keys. */
export class ApiKeys {
  constructor(private readonly t: Transport) {}

  /** Mints a public API key (`phk_…`); `key` is shown this once. Not retried on 5xx: a repeat would mint two. */
  async create(projectId: number, name: string): Promise<CreatedKey> {
    return decode(await this.t.request("POST", path("projects", projectId, "api-keys"), { body: { name }, retrySafe: false }));
  }

  /** The key stops working at once (the public API answers it 401). */
  async revoke(projectId: number, keyId: number): Promise<void> {
    await this.t.request("DELETE", path("projects", projectId, "api-keys", keyId), { retrySafe: true });
  }
}

/** A UTC day: `YYYY-MM-DD` as given, or a `Date`'s UTC day. */
const day = (value: string | Date | undefined) => (value instanceof Date ? value.toISOString().slice(0, 10) : value);

export interface UsageRange {
  /** The first UTC day counted; default: 29 days before `until`. At most 400 days are counted. */
  since?: string | Date;
  /** The last UTC day counted, included; default: today. */
  until?: string | Date;
}

/** `/projects/{id}/usage`: what a project used per UTC day, for billing. */
export class UsageReports {
  constructor(private readonly t: Transport) {}

  async get(projectId: number, range: UsageRange = {}): Promise<Usage> {
    const query = { since: day(range.since), until: day(range.until) };
    return decode(await this.t.request("GET", path("projects", projectId, "usage"), { query, retrySafe: true }));
  }
}

export type PortalRole = "owner" | "member" | "viewer";

export interface CreatePortalLink {
  /** One of the operator's users; the audit log names them `portal:<id>`. */
  user: { id: string; email?: string; name?: string };
  /** `owner` and `member` manage endpoints and deliveries; `viewer` only reads. */
  role: PortalRole;
  /** Seconds until the link expires: 1 to 3600, default 300. */
  expires_in?: number;
}

/** `/projects/{id}/portal-links`: single-use sign-in links into a project's portal. */
export class PortalLinks {
  constructor(private readonly t: Transport) {}

  /** Not retried on 5xx: a repeat would make a second link. */
  async create(projectId: number, params: CreatePortalLink): Promise<PortalLink> {
    return decode(await this.t.request("POST", path("projects", projectId, "portal-links"), { body: params, retrySafe: false }));
  }
}
