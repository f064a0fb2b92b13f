// Recovering an endpoint's failures and following the replay, against a real
// `posthorn serve` (started by sdk/test.sh with a retry schedule of 200 ms steps).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client, Operator, ApiError } from "../dist/esm/index.js";
import { env, waitFor } from "./helpers.mjs";

/** A receiver answering `status` to every delivery and noting [status, event id]. */
async function flakyReceiver(t) {
  const receiver = { status: 500, seen: [] };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      receiver.seen.push([receiver.status, JSON.parse(Buffer.concat(chunks).toString()).event_id]);
      res.writeHead(receiver.status).end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  receiver.port = server.address().port;
  receiver.events = (status) => receiver.seen.filter(([s]) => s === status).map(([, id]) => id).sort();
  return receiver;
}

const refused = (status, code, promise) =>
  assert.rejects(promise, (e) => e instanceof ApiError && e.status === status && e.code === code);

test("recover replays the dead letters once, and the replay can be followed", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const receiver = await flakyReceiver(t);
  const hook = await client.webhooks.create({ url: `http://127.0.0.1:${receiver.port}/hook`, events: ["recover.ts"] });
  t.after(() => client.webhooks.delete(hook.id));

  const sent = [];
  for (let n = 0; n < 2; n++) sent.push((await client.events.send("recover.ts", { n })).id);
  sent.sort();
  // Every automatic attempt fails until the schedule is spent: dead letters.
  for (const id of sent) {
    await waitFor(`${id} to be dead-lettered`, async () =>
      (await client.deliveries.list({ event_id: id })).data.some((d) => d.status === "dead_letter"), 60_000);
  }
  assert.deepEqual([...new Set(receiver.events(500))], sent);

  receiver.status = 200;
  const since = new Date(Date.now() - 5 * 60_000);
  const replay = await client.webhooks.recover(hook.id, { since });
  assert.equal(replay.total, 2);
  assert.ok(["running", "done"].includes(replay.status), replay.status);
  assert.ok(replay.per_second > 0);
  const done = await waitFor("the replay to finish", async () => {
    const r = await client.replays.get(replay.id);
    return r.status === "done" && r.finished === r.total ? r : null;
  });
  assert.deepEqual([done.id, done.total, done.queued, done.finished], [replay.id, 2, 2, 2]);
  await waitFor("the receiver to get both again", () => receiver.events(200).length === 2);
  assert.deepEqual(receiver.events(200), sent); // once each

  // Nothing fails any more: an empty replay (times as text this time), done at once.
  const now = new Date();
  const empty = await client.webhooks.recover(hook.id, { since: since.toISOString(), until: new Date(now.getTime() + 60_000).toISOString() });
  assert.deepEqual([empty.total, empty.queued], [0, 0]);
  assert.notEqual(empty.id, replay.id);
  await waitFor("the empty replay to be done", async () => (await client.replays.get(empty.id)).status === "done");
  const cancelled = await client.replays.cancel(empty.id);
  assert.equal(cancelled.id, empty.id);
  assert.ok(["done", "cancelled"].includes(cancelled.status), cancelled.status);
  assert.deepEqual(await client.replays.cancel(replay.id), done); // a finished replay is left as it was

  // Errors: unknown replay or endpoint, and a window that ends before it starts.
  await refused(404, "not_found", client.replays.get(1e12));
  await refused(404, "not_found", client.replays.cancel(1e12));
  await refused(404, "not_found", client.webhooks.recover(1e12, { since }));
  // A window that ends before it starts is empty.
  const emptyWindow = await client.webhooks.recover(hook.id, { since: now, until: new Date(now.getTime() - 3_600_000) });
  assert.deepEqual([emptyWindow.total, emptyWindow.status], [0, "done"]);
  await refused(422, "invalid", client.webhooks.recover(hook.id, { since: "yesterday" }));
});

test("another project's endpoint and replay are not found", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const op = new Operator(env(t, "POSTHORN_OPERATOR_KEY"), { baseUrl: base });
  const hook = await client.webhooks.create({ url: "https://example.com/recover-ts", events: ["recover.other"] });
  t.after(() => client.webhooks.delete(hook.id));
  const project = await op.projects.create({ name: "TypeScript recover, other project" });
  t.after(() => op.projects.delete(project.id));

  const since = new Date(Date.now() - 60_000);
  const replay = await client.webhooks.recover(hook.id, { since });
  const other = new Client((await op.apiKeys.create(project.id, "other")).key, { baseUrl: base });
  await refused(404, "not_found", other.webhooks.recover(hook.id, { since }));
  await refused(404, "not_found", other.replays.get(replay.id));
  await refused(404, "not_found", other.replays.cancel(replay.id));
  await waitFor("the replay to finish", async () => (await client.replays.get(replay.id)).status === "done");
});
