// Subjects on events, erasure by subject and of one event, against a real `posthorn serve`
// (started by sdk/test.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client, ApiError } from "../dist/esm/index.js";
import { env, freePort, waitFor } from "./helpers.mjs";

const refused = (status, code, promise) =>
  assert.rejects(promise, (e) => e instanceof ApiError && e.status === status && e.code === code);

function setup(t) {
  const base = env(t, "POSTHORN_TEST_URL");
  return base ? new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base }) : null;
}

test("events sent with a subject are erased by it", async (t) => {
  const client = setup(t);
  if (!client) return;
  // Nothing listens there: attempts fail at once and are dead-lettered within a second.
  const hook = await client.webhooks.create({ url: `http://127.0.0.1:${await freePort()}/gone`, events: ["erasure.ts"] });
  t.after(() => client.webhooks.delete(hook.id));
  const subject = `user:ts-${randomUUID().slice(0, 12)}`;

  const sent = await client.events.send("erasure.ts", { email: "ana@example.com" }, { subjects: [subject, "tenant:7"] });
  const batch = await client.events.sendBatch([
    { event: "erasure.ts", data: { n: 1 }, subjects: [subject] },
    { event: "erasure.ts", data: { n: 2 } },
  ]);
  assert.deepEqual(batch.map((a) => a.deliveries), [1, 1]);
  const event = await client.events.get(sent.id);
  assert.deepEqual([event.data, event.subjects, event.erased_at, event.erasure_id], [{ email: "ana@example.com" }, [subject, "tenant:7"], null, null]);
  assert.deepEqual((await client.events.get(batch[0].id)).subjects, [subject]);
  assert.deepEqual((await client.events.get(batch[1].id)).subjects, []);

  const erasure = await client.erasures.create(subject);
  assert.deepEqual([erasure.subject, erasure.event_id], [subject, null]);
  assert.ok(["running", "done"].includes(erasure.status), erasure.status);
  assert.ok(erasure.created_at instanceof Date);
  const done = await waitFor("the erasure to be done", async () => {
    const e = await client.erasures.get(erasure.id);
    return e.status === "done" ? e : null;
  }, 20_000);
  assert.deepEqual([done.id, done.events], [erasure.id, 2]);
  assert.ok(done.finished_at instanceof Date);
  for (const id of [sent.id, batch[0].id]) {
    const erased = await client.events.get(id);
    assert.deepEqual([erased.data, erased.subjects, erased.erasure_id], [null, [], erasure.id]);
    assert.ok(erased.erased_at instanceof Date);
  }
  const kept = await client.events.get(batch[1].id);
  assert.deepEqual([kept.data, kept.erased_at], [{ n: 2 }, null]);

  // An erased event has nothing left to send again.
  const [attempt] = (await client.deliveries.list({ event_id: sent.id })).data;
  await refused(409, "conflict", client.deliveries.retry(attempt.id));

  // One event by id: erased within the call; erasing it again answers the same.
  assert.equal(await client.events.eraseData(batch[1].id), null);
  const gone = await client.events.get(batch[1].id);
  assert.equal(gone.data, null);
  assert.ok(gone.erasure_id !== null && gone.erasure_id !== erasure.id, String(gone.erasure_id));
  assert.equal(await client.events.eraseData(batch[1].id), null);
});

test("a batch keeps its idempotency keys", async (t) => {
  const client = setup(t);
  if (!client) return;
  const items = [{ event: "erasure.ts_batch", data: { n: 1 }, id: `ts-batch-${randomUUID()}`, subjects: ["user:1"] }];
  const first = await client.events.sendBatch(items);
  assert.deepEqual(await client.events.sendBatch(items), first);
});

test("unknown erasures and events, and refused subjects", async (t) => {
  const client = setup(t);
  if (!client) return;
  await refused(404, "not_found", client.erasures.get(1e12));
  await refused(404, "not_found", client.events.eraseData("evt_unknown"));
  await refused(422, "invalid", client.erasures.create(""));
  await refused(422, "invalid", client.events.send("erasure.ts", {}, { subjects: [""] }));
  await refused(422, "invalid", client.events.send("erasure.ts", {}, { subjects: Array.from({ length: 11 }, (_, n) => `user:${n}`) }));
});
