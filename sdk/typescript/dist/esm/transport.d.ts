import { type RetryPolicy } from "./retry.js";
/** What `onResponse` hooks receive after every HTTP attempt. */
export interface Attempt {
    method: string;
    path: string;
    /** 0 for the first try of a call, then 1, 2, … */
    retry: number;
    /** Unix seconds just before the request was sent. */
    sentAt: number;
    /** Unix seconds when the answer (or the error) came. */
    receivedAt: number;
    /** The HTTP status, or null when no answer came (connection error, timeout). */
    status: number | null;
    headers: Record<string, string>;
}
export interface RequestOptions {
    query?: Record<string, string | number | undefined | null>;
    body?: unknown;
    headers?: Record<string, string>;
    /** Whether a 5xx or a connection error may be retried (429s always are). */
    retrySafe: boolean;
    /** Seconds for this call's attempts instead of the client's `timeout`. */
    timeout?: number;
}
export interface TransportOptions {
    apiKey: string;
    baseUrl: string;
    timeout: number;
    policy: RetryPolicy;
    userAgent: string;
    onResponse?: (attempt: Attempt) => void;
    sleep?: (seconds: number) => Promise<void>;
    clock?: () => number;
}
export declare class Transport {
    readonly options: TransportOptions;
    sleep: (seconds: number) => Promise<void>;
    clock: () => number;
    private remaining;
    private reset;
    constructor(options: TransportOptions);
    request<T = any>(method: string, path: string, opts: RequestOptions): Promise<T>;
    /** Proactive: with the quota (nearly) spent, sleep until the minute resets. */
    private waitForQuota;
    private noteQuota;
    private log;
}
