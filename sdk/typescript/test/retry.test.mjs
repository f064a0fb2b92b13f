// The retry rules, as pure arithmetic and against a scripted local HTTP server (the real
// server cannot be made to answer 503 on demand).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import {
  Client,
  ApiError,
  RateLimitError,
  ApiConnectionError,
  backoff,
  parseRetryAfter,
  retryWait,
  DEFAULT_POLICY,
} from "../dist/esm/index.js";
import { freePort } from "./helpers.mjs";

test("backoff doubles with jitter and is capped", () => {
  const p = { ...DEFAULT_POLICY, backoffBase: 1, backoffCap: 8 };
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((n) => backoff(n, p, () => 0)), [0.5, 1, 2, 4, 4, 4]);
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((n) => backoff(n, p, () => 1)), [1, 2, 4, 8, 8, 8]);
  assert.ok(backoff(10_000, p) <= 8);
});

test("Retry-After is read as seconds or an HTTP-date", () => {
  const now = 1_700_000_000;
  assert.equal(parseRetryAfter("7", now), 7);
  const date = new Date((now + 42) * 1000).toUTCString();
  assert.ok(Math.abs(parseRetryAfter(date, now) - 42) <= 1);
  assert.equal(parseRetryAfter(new Date((now - 42) * 1000).toUTCString(), now), 0);
  assert.equal(parseRetryAfter("soon", now), null);
  assert.equal(parseRetryAfter("1", now), 1);
  assert.equal(parseRetryAfter(null, now), null);
});

test("a 429 waits the larger of Retry-After and the backoff", () => {
  const p = { ...DEFAULT_POLICY, backoffBase: 1, backoffCap: 30 };
  assert.equal(retryWait(429, 0, 10, p, () => 1), 10);
  assert.equal(retryWait(429, 5, 10, p, () => 1), 30);
  assert.equal(retryWait(503, 0, 10, p, () => 1), 1);
});

const ERR = { error: { code: "internal", message: "internal error" } };
const HOOK = { id: 1, url: "https://x.test/h", events: ["*"], description: "", enabled: true, created_at: "2026-11-30T12:00:00.123456Z", headers: [] };

/** A server answering each request with the next scripted [status, headers, body]. */
async function scripted(t, answers) {
  const seen = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString();
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: raw ? JSON.parse(raw) : null });
      const [status, headers, body] = answers.shift();
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const sleeps = [];
  const client = new Client("phk_test", { baseUrl: `http://127.0.0.1:${server.address().port}` });
  client.transport.sleep = async (s) => void sleeps.push(s); // record waits instead of waiting
  return { client, seen, sleeps };
}

test("a GET is retried after 5xx", async (t) => {
  const { client, seen, sleeps } = await scripted(t, [[503, {}, ERR], [500, {}, ERR], [200, {}, HOOK]]);
  const hook = await client.webhooks.get(1);
  assert.equal(hook.id, 1);
  assert.ok(hook.created_at instanceof Date);
  assert.equal(seen.length, 3);
  assert.equal(sleeps.length, 2);
});

test("creating a webhook is not retried after 5xx", async (t) => {
  const { client, seen } = await scripted(t, [[503, {}, ERR], [201, {}, HOOK]]);
  await assert.rejects(client.webhooks.create({ url: "https://x.test/h", events: ["*"] }), (e) => e instanceof ApiError && e.status === 503 && e.code === "internal");
  assert.equal(seen.length, 1);
});

const REPLAY = { id: 7, status: "running", total: 2, queued: 0, finished: 0, per_second: 10 };

test("recovering is not retried after 5xx, following and cancelling are", async (t) => {
  const { client, seen } = await scripted(t, [
    [503, {}, ERR], // recover: one attempt
    [202, {}, REPLAY], // recover with a Date
    [502, {}, ERR], [200, {}, REPLAY], // get
    [500, {}, ERR], [200, {}, { ...REPLAY, status: "cancelled" }], // cancel
  ]);
  await assert.rejects(
    client.webhooks.recover(1, { since: "2026-11-30T12:00:00Z", until: "2026-11-30T13:00:00+01:00" }),
    (e) => e instanceof ApiError && e.status === 503,
  );
  assert.deepEqual(seen.map((s) => [s.method, s.url, s.body]), [
    ["POST", "/public/v1/webhooks/1/recover", { since: "2026-11-30T12:00:00Z", until: "2026-11-30T13:00:00+01:00" }],
  ]);
  // A Date goes as UTC; no `until` is sent unless given.
  await client.webhooks.recover(1, { since: new Date("2026-11-30T13:00:00+01:00") });
  assert.deepEqual(seen[1].body, { since: "2026-11-30T12:00:00.000Z" });
  assert.equal((await client.replays.get(7)).total, 2);
  assert.equal((await client.replays.cancel(7)).status, "cancelled");
  assert.deepEqual(seen.slice(2).map((s) => `${s.method} ${s.url}`), ["GET /public/v1/replays/7", "GET /public/v1/replays/7", "POST /public/v1/replays/7/cancel", "POST /public/v1/replays/7/cancel"]);
});

test("sending an event is retried with the same idempotency key", async (t) => {
  const { client, seen } = await scripted(t, [[502, {}, ERR], [202, {}, { id: "evt_1", deliveries: 0 }]]);
  assert.equal((await client.events.send("order.paid", {})).id, "evt_1");
  const keys = new Set(seen.map((s) => s.headers["idempotency-key"]));
  assert.equal(seen.length, 2);
  assert.equal(keys.size, 1);
  assert.ok([...keys][0]);
});

const ERASURE = { id: 9, status: "running", subject: null, event_id: "evt_1", created_at: "2026-11-30T12:00:00Z", finished_at: null, events: 1, attempts: 2, dead_lettered: 0, inspector_copies: 0 };

test("erasing is retried for one event but not for a subject", async (t) => {
  // 202: an attempt was still in flight; 204: done.
  const { client, seen } = await scripted(t, [[503, {}, ERR], [202, {}, ERASURE], [204, {}, null], [503, {}, ERR], [202, {}, ERASURE]]);
  const erasure = await client.events.eraseData("evt_1");
  assert.deepEqual([erasure.id, erasure.finished_at], [9, null]);
  assert.ok(erasure.created_at instanceof Date);
  assert.equal(await client.events.eraseData("evt_1"), null);
  assert.deepEqual(seen.map((s) => [s.method, s.url]), Array(3).fill(["DELETE", "/public/v1/events/evt_1/data"]));
  await assert.rejects(client.erasures.create("user:42"), (e) => e instanceof ApiError && e.status === 503);
  assert.equal(seen.length, 4);
});

test("a batch is retried with the same idempotency keys", async (t) => {
  const accepted = { data: [{ id: "evt_1", deliveries: 0 }, { id: "evt_2", deliveries: 1 }] };
  const { client, seen } = await scripted(t, [[502, {}, ERR], [202, {}, accepted]]);
  const sent = await client.events.sendBatch([
    { event: "a.b", data: {}, subjects: ["user:1"] },
    { event: "a.b", data: {}, id: "mine" },
  ]);
  assert.deepEqual(sent.map((a) => a.id), ["evt_1", "evt_2"]);
  const [first, second] = seen.map((s) => s.body);
  assert.deepEqual(first, second);
  assert.equal(first.events[1].id, "mine");
  assert.ok(first.events[0].id);
  assert.deepEqual(first.events[0].subjects, ["user:1"]);
});

test("other 4xx are never retried", async (t) => {
  const { client, seen } = await scripted(t, [[422, {}, { error: { code: "invalid", message: "url: bad" } }]]);
  await assert.rejects(client.webhooks.update(1, { url: "nope" }), (e) => e instanceof ApiError && e.status === 422 && e.code === "invalid" && e.apiMessage === "url: bad");
  assert.equal(seen.length, 1);
});

test("a 429 is retried after Retry-After for any call", async (t) => {
  const limited = { error: { code: "rate_limited", message: "slow down" } };
  const { client, sleeps } = await scripted(t, [[429, { "Retry-After": "3" }, limited], [201, {}, HOOK]]);
  assert.equal((await client.webhooks.create({ url: "https://x.test/h", events: ["*"] })).id, 1);
  assert.ok(sleeps[0] >= 3);
});

test("a Retry-After beyond maxWait throws", async (t) => {
  const limited = { error: { code: "rate_limited", message: "slow down" } };
  const { client, sleeps } = await scripted(t, [[429, { "Retry-After": "3600" }, limited]]);
  await assert.rejects(client.events.list(), (e) => e instanceof RateLimitError && e.retryAfter === 3600);
  assert.deepEqual(sleeps, []);
});

test("a spent quota waits for the reset before the next call", async (t) => {
  const reset = Math.floor(Date.now() / 1000) + 20;
  const spent = { "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": String(reset) };
  const { client, sleeps } = await scripted(t, [[200, spent, HOOK], [200, {}, HOOK]]);
  await client.webhooks.get(1);
  assert.deepEqual(sleeps, []);
  await client.webhooks.get(1);
  assert.ok(sleeps[0] > 18 && sleeps[0] <= 21, String(sleeps[0]));
});

test("connection errors are retried for safe calls, then thrown", async () => {
  const client = new Client("phk_test", { baseUrl: `http://127.0.0.1:${await freePort()}`, maxRetries: 2 });
  const sleeps = [];
  client.transport.sleep = async (s) => void sleeps.push(s);
  await assert.rejects(client.events.get("evt_1"), ApiConnectionError);
  assert.equal(sleeps.length, 2);
  sleeps.length = 0;
  await assert.rejects(client.deliveries.retry(1), ApiConnectionError);
  assert.deepEqual(sleeps, []);
});
