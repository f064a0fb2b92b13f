/**
 * Typed models of the public API's answers; field names are the JSON names, times are
 * `Date`s. Each is checked against `/public/v1/openapi.json` by the test suite. Fields the
 * server adds later pass through untouched, so an older client keeps working.
 */
/** An endpoint. `secret` is only set in the answers to create and rotateSecret. */
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
    secret?: string;
}
export interface EventAccepted {
    id: string;
    deliveries: number;
}
export interface Event {
    id: string;
    event: string;
    data: unknown;
    deliveries: number;
    ordering_key: string | null;
    created_at: Date;
}
export type DeliveryStatus = "pending" | "in_flight" | "succeeded" | "failed" | "dead_letter";
export type DeliveryTrigger = "auto" | "manual_retry" | "redirect" | "test";
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
/** One page of a list: resume from `next_cursor`; fetch again now only if `has_more`. */
export interface Page<T> {
    data: T[];
    has_more: boolean;
    next_cursor: string;
}
/** A model from its JSON object: the time fields become `Date`s. */
export declare function decode<T>(obj: any): T;
