"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_POLICY = exports.retryWait = exports.parseRetryAfter = exports.backoff = exports.ApiConnectionError = exports.RateLimitError = exports.ApiError = exports.PosthornError = exports.PortalLinks = exports.UsageReports = exports.ApiKeys = exports.Projects = exports.Operator = exports.VERSION = exports.EventTypes = exports.Erasures = exports.Replays = exports.Deliveries = exports.Events = exports.Webhooks = exports.CursorIterator = exports.Client = exports.DEFAULT_TOLERANCE = exports.MissingHeadersError = exports.InvalidTimestampError = exports.InvalidSignatureError = exports.WebhookVerificationError = exports.sign = exports.verify = void 0;
/**
 * Posthorn: verify webhooks, call the public API with backoff, page through lists, and
 * run projects for customers through the operator API.
 *
 *     import { verify, WebhookVerificationError, Client, Operator } from "@posthorn/sdk";
 */
var webhooks_js_1 = require("./webhooks.js");
Object.defineProperty(exports, "verify", { enumerable: true, get: function () { return webhooks_js_1.verify; } });
Object.defineProperty(exports, "sign", { enumerable: true, get: function () { return webhooks_js_1.sign; } });
Object.defineProperty(exports, "WebhookVerificationError", { enumerable: true, get: function () { return webhooks_js_1.WebhookVerificationError; } });
Object.defineProperty(exports, "InvalidSignatureError", { enumerable: true, get: function () { return webhooks_js_1.InvalidSignatureError; } });
Object.defineProperty(exports, "InvalidTimestampError", { enumerable: true, get: function () { return webhooks_js_1.InvalidTimestampError; } });
Object.defineProperty(exports, "MissingHeadersError", { enumerable: true, get: function () { return webhooks_js_1.MissingHeadersError; } });
Object.defineProperty(exports, "DEFAULT_TOLERANCE", { enumerable: true, get: function () { return webhooks_js_1.DEFAULT_TOLERANCE; } });
var client_js_1 = require("./client.js");
Object.defineProperty(exports, "Client", { enumerable: true, get: function () { return client_js_1.Client; } });
Object.defineProperty(exports, "CursorIterator", { enumerable: true, get: function () { return client_js_1.CursorIterator; } });
Object.defineProperty(exports, "Webhooks", { enumerable: true, get: function () { return client_js_1.Webhooks; } });
Object.defineProperty(exports, "Events", { enumerable: true, get: function () { return client_js_1.Events; } });
Object.defineProperty(exports, "Deliveries", { enumerable: true, get: function () { return client_js_1.Deliveries; } });
Object.defineProperty(exports, "Replays", { enumerable: true, get: function () { return client_js_1.Replays; } });
Object.defineProperty(exports, "Erasures", { enumerable: true, get: function () { return client_js_1.Erasures; } });
Object.defineProperty(exports, "EventTypes", { enumerable: true, get: function () { return client_js_1.EventTypes; } });
Object.defineProperty(exports, "VERSION", { enumerable: true, get: function () { return client_js_1.VERSION; } });
var operator_js_1 = require("./operator.js");
Object.defineProperty(exports, "Operator", { enumerable: true, get: function () { return operator_js_1.Operator; } });
Object.defineProperty(exports, "Projects", { enumerable: true, get: function () { return operator_js_1.Projects; } });
Object.defineProperty(exports, "ApiKeys", { enumerable: true, get: function () { return operator_js_1.ApiKeys; } });
Object.defineProperty(exports, "UsageReports", { enumerable: true, get: function () { return operator_js_1.UsageReports; } });
Object.defineProperty(exports, "PortalLinks", { enumerable: true, get: function () { return operator_js_1.PortalLinks; } });
var errors_js_1 = require("./errors.js");
Object.defineProperty(exports, "PosthornError", { enumerable: true, get: function () { return errors_js_1.PosthornError; } });
Object.defineProperty(exports, "ApiError", { enumerable: true, get: function () { return errors_js_1.ApiError; } });
Object.defineProperty(exports, "RateLimitError", { enumerable: true, get: function () { return errors_js_1.RateLimitError; } });
Object.defineProperty(exports, "ApiConnectionError", { enumerable: true, get: function () { return errors_js_1.ApiConnectionError; } });
var retry_js_1 = require("./retry.js");
Object.defineProperty(exports, "backoff", { enumerable: true, get: function () { return retry_js_1.backoff; } });
Object.defineProperty(exports, "parseRetryAfter", { enumerable: true, get: function () { return retry_js_1.parseRetryAfter; } });
Object.defineProperty(exports, "retryWait", { enumerable: true, get: function () { return retry_js_1.retryWait; } });
Object.defineProperty(exports, "DEFAULT_POLICY", { enumerable: true, get: function () { return retry_js_1.DEFAULT_POLICY; } });
