"use strict";
/**
 * Typed models of the public and operator APIs' answers; field names are the JSON names,
 * times are `Date`s. Each is checked against `/public/v1/openapi.json` or
 * `/operator/v1/openapi.json` by the test suite. Fields the server adds later pass
 * through untouched, so an older client keeps working.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.decode = decode;
const TIME_FIELDS = ["created_at", "scheduled_at", "started_at", "finished_at", "expires_at", "erased_at", "not_after", "updated_at"];
// Nested models, decoded in turn; named one by one so that an event's `data` stays as sent.
const NESTED_FIELDS = ["client_certificate"];
/** A model from its JSON object: the time fields become `Date`s. */
function decode(obj) {
    if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
        throw new TypeError("expected a JSON object from the API");
    }
    const out = { ...obj };
    for (const field of TIME_FIELDS) {
        if (typeof out[field] === "string")
            out[field] = new Date(out[field]);
    }
    for (const field of NESTED_FIELDS) {
        if (out[field] !== null && typeof out[field] === "object")
            out[field] = decode(out[field]);
    }
    return out;
}
