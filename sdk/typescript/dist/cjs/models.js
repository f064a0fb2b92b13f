"use strict";
/**
 * Typed models of the public and operator APIs' answers; field names are the JSON names,
 * times are `Date`s. Each is checked against `/public/v1/openapi.json` or
 * `/operator/v1/openapi.json` by the test suite. Fields the server adds later pass
 * through untouched, so an older client keeps working.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.decode = decode;
const TIME_FIELDS = ["created_at", "scheduled_at", "started_at", "finished_at", "expires_at", "erased_at"];
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
    return out;
}
