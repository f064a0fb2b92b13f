/**
 * Typed models of the public and operator APIs' answers; field names are the JSON names,
 * times are `Date`s. Each is checked against `/public/v1/openapi.json` or
 * `/operator/v1/openapi.json` by the test suite. Fields the server adds later pass
 * through untouched, so an older client keeps working.
 */
/**
 * An endpoint. `secret` is only set in the answers to create and rotateSecret of an HMAC
 * endpoint, and to an update that switches to `hmac-sha256`.
 */
export interface Webhook {
    id: number;
    url: string;
    events: string[];
    description: string;
    enabled: boolean;
    created_at: Date;
    headers: string[];
    /** Attempts per second at most; null: unlimited. */
    rate_limit: number | null;
    /** Presented to the receiver when it asks for one (mutual TLS); null: none. */
    client_certificate: ClientCertificate | null;
    /** `hmac-sha256` (signed with the secret) or `ed25519` (v1a, checked with `public_key`). */
    signature_scheme: SignatureScheme;
    /** `whpk_…`, once the endpoint has an ed25519 key; null: none. */
    public_key: string | null;
    /** The CEL filter events must match to be sent here; null: every event of `events`. */
    filter: string | null;
    secret?: string;
    /** Only for an endpoint that is no plain URL (a `posthorn listen` session's). */
    destination?: Destination;
}
/** Where an endpoint that is no plain URL sends. */
export interface Destination {
    /** `listen`: a `posthorn listen` session's (its deliveries go to the CLI's machine);
     * `redis`, `nats`, `mqtt` or `rabbitmq`: a broker it publishes to. */
    type: "listen" | "redis" | "nats" | "mqtt" | "rabbitmq";
    /** A listen session's `--name`; null: it ends when its CLI exits (null for a broker). */
    name: string | null;
    /** A listen session's CLI is connected now. */
    connected: boolean;
    /** A broker's URL, without credentials. */
    url?: string;
    /** `redis`: the stream appended to, and its approximate length bound. */
    stream?: string;
    maxlen?: number;
    /** `nats`: the JetStream subject published to. */
    subject?: string;
    /** `rabbitmq`: the exchange (`""`: the default exchange) and routing key. */
    exchange?: string;
    routing_key?: string;
    /** `mqtt`: the topic published to, and the QoS (0 or 1). */
    topic?: string;
    qos?: number;
    /** A broker has credentials (sealed, never shown). */
    credentials_set: boolean;
}
/** How an endpoint's deliveries are signed. */
export type SignatureScheme = "hmac-sha256" | "ed25519";
/** What is shown of an endpoint's client certificate (its PEM and key never are). */
export interface ClientCertificate {
    /** E.g. `CN=posthorn-client, O=Shop`. */
    subject: string;
    not_after: Date;
}
export interface EventAccepted {
    id: string;
    deliveries: number;
}
export interface Event {
    id: string;
    event: string;
    /** The data it was sent with; null once erased. */
    data?: Record<string, unknown> | null;
    deliveries: number;
    ordering_key: string | null;
    created_at: Date;
    /** The data subjects it was sent with (`[]` when none, or once erased). */
    subjects: string[];
    /** When its data was erased, and by which erasure; null while it is kept. */
    erased_at: Date | null;
    erasure_id: number | null;
    /**
     * The endpoints subscribed to its type whose filters it did not pass, and why: they had
     * no attempt (`deliveries` counts only the others). `[]` when none.
     */
    filtered_out: FilteredOut[];
}
/** An endpoint subscribed to an event's type that its filter kept the event from. */
export interface FilteredOut {
    endpoint_id: number;
    /** E.g. `the filter was false`, or why the filter failed on this event. */
    reason: string;
}
export type DeliveryStatus = "pending" | "in_flight" | "succeeded" | "failed" | "dead_letter";
export type DeliveryTrigger = "auto" | "manual_retry" | "redirect" | "test" | "notice";
/** One delivery attempt. */
export interface Delivery {
    id: number;
    request_id: string;
    event_id: string;
    event_type: string;
    endpoint_id: number;
    target_url: string;
    attempt: number;
    trigger: DeliveryTrigger;
    triggered_by: string | null;
    status: DeliveryStatus;
    scheduled_at: Date;
    started_at: Date | null;
    created_at: Date;
    finished_at: Date | null;
    duration_ms: number | null;
    response_status: number | null;
    error_kind: string | null;
    error: string | null;
    ordering_key: string | null;
    /** While the attempt waits behind an earlier event with the same key: that event's id. */
    waits_for: string | null;
}
/** An attempt with the exact body sent and the headers both ways. */
export interface DeliveryDetail extends Delivery {
    payload: string;
    request_headers: [string, string][] | null;
    response_headers: [string, string][] | null;
    response_body: string | null;
}
export type ReplayStatus = "running" | "done" | "cancelled";
/** A replay (as `webhooks.recover` starts it) and how far it has come. */
export interface Replay {
    id: number;
    status: ReplayStatus;
    /** The (event, endpoint) pairs it sends, one new attempt each. */
    total: number;
    /** Attempts queued so far. */
    queued: number;
    /** Of those, attempts with an outcome. */
    finished: number;
    /** Attempts queued per second, per endpoint. */
    per_second: number;
}
export type ErasureStatus = "running" | "done";
/** An erasure (by subject, or of one event) and what it has erased so far. */
export interface Erasure {
    id: number;
    /** `running`, then `done` once no attempt of its events is in flight. */
    status: ErasureStatus;
    /** The subject; null for the erasure of one event. */
    subject: string | null;
    /** The event; null for an erasure by subject. */
    event_id: string | null;
    created_at: Date;
    finished_at: Date | null;
    /** Events whose data, subjects and attempts' responses were erased. */
    events: number;
    /** Attempts of those events. */
    attempts: number;
    /** Waiting attempts ended as dead letters (`error_kind` `erased`). */
    dead_lettered: number;
    /** Redirect copies in inspector bins whose bodies were erased. */
    inspector_copies: number;
}
/**
 * An event type's JSON Schema (draft 2020-12) as set: while it is set, `events.send` and
 * `events.sendBatch` refuse events of the type whose `data` fails it.
 */
export interface EventTypeSchema {
    /** The event type, e.g. `order.paid`. */
    event: string;
    /** 1 when first set, one more at every change. */
    version: number;
    updated_at: Date;
    /** The schema as sent. */
    schema: Record<string, unknown>;
}
/** One page of a list: resume from `next_cursor`; fetch again now only if `has_more`. */
export interface Page<T> {
    data: T[];
    has_more: boolean;
    next_cursor: string;
}
/** Every limit's value for a project: the default, the plan's or the operator's override. */
export interface EffectiveLimits {
    endpoints: number;
    api_keys: number;
    members: number;
    event_types_per_endpoint: number;
    concurrent_replays: number;
    data_depth: number;
    concurrent_erasures: number;
    api_requests_per_minute: number;
    retention_days: number;
}
/** What the portal shows instead of Posthorn's look; null: not set. */
export interface Brand {
    name?: string | null;
    accent?: string | null;
    logo_url?: string | null;
}
export type Plan = "trial" | "business";
/** One of the operator's customers. */
export interface Project {
    id: number;
    /** The operator's own id for this customer. */
    uid?: string | null;
    name: string;
    plan: Plan;
    limits: EffectiveLimits;
    /** Origins that may frame this project's portal pages. */
    frame_ancestors: string[];
    brand: Brand;
    /** Attempts carry W3C trace context (`traceparent`) to the project's receivers. */
    trace_propagation: boolean;
    created_at: Date;
}
/** A project's new public API key; `key` is shown this once (stored hashed). */
export interface CreatedKey {
    id: number;
    name: string;
    /** The key's first characters, as the dashboard shows it. */
    prefix: string;
    key: string;
    created_at: Date;
}
export interface AttemptCounts {
    succeeded: number;
    failed: number;
    dead_letter: number;
}
export interface UsageDay {
    /** A UTC day, `YYYY-MM-DD`. */
    day: string;
    events: number;
    attempts: AttemptCounts;
}
/** What a project used from `since` to `until` (UTC days `YYYY-MM-DD`, both included). */
export interface Usage {
    project_id: number;
    since: string;
    until: string;
    /** Events accepted in the window. */
    events: number;
    /** Attempts finished in the window, by how they ended. */
    attempts: AttemptCounts;
    /** The days that saw any use, oldest first. */
    days: UsageDay[];
}
/** Single-use: opening `url` signs the browser into the project's portal. */
export interface PortalLink {
    url: string;
    expires_at: Date;
}
/** A model from its JSON object: the time fields become `Date`s. */
export declare function decode<T>(obj: any): T;
