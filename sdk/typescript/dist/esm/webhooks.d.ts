export declare const DEFAULT_TOLERANCE = 300;
/** The delivery cannot be trusted; `reason` says why. */
export declare class WebhookVerificationError extends Error {
    readonly reason: string;
    constructor(reason: string);
}
/** No signature in the headers matches the body and the secret. */
export declare class InvalidSignatureError extends WebhookVerificationError {
}
/** The timestamp is not a number, or further than the tolerance from now. */
export declare class InvalidTimestampError extends WebhookVerificationError {
}
/** Neither scheme's headers are all present. */
export declare class MissingHeadersError extends WebhookVerificationError {
}
/**
 * Request headers in any common shape: Node's `req.headers`, a Fetch `Headers`, a `Map`,
 * a plain object or a list of pairs. Names are matched case-insensitively.
 */
export type HeadersLike = {
    entries(): IterableIterator<[string, string]>;
} | Iterable<[string, string]> | Record<string, string | string[] | undefined>;
/**
 * Checks a delivery and returns its parsed JSON body.
 *
 * `payload` is the raw request body exactly as received (a Buffer, Uint8Array or string,
 * never re-serialised JSON); `secret` is the endpoint's `whsec_…` secret, or the `whpk_…`
 * public key of an endpoint with the ed25519 scheme (then only `v1a` signatures count).
 * Throws a subclass of `WebhookVerificationError` when the delivery is not genuine.
 */
export declare function verify<T = any>(payload: Uint8Array | ArrayBuffer | string, headers: HeadersLike, secret: string, tolerance?: number, now?: number): T;
/** The headers Posthorn would send for `payload`: for tests of your receiver. */
export declare function sign(secret: string, msgId: string, timestamp: number, payload: Uint8Array | string): Record<string, string>;
