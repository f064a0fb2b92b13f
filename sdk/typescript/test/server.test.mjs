// Against a real `posthorn serve` on a fresh database (started by sdk/test.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { connect } from "node:net";
import { Client, ApiError, verify } from "../dist/esm/index.js";
import { ROOT, env, freePort, readmeBlock, sleep, waitFor } from "./helpers.mjs";

/** The README's Express receiver, run from inside the package so `@posthorn/sdk` resolves to it. */
async function startReceiver(t, secret, port) {
  const dir = mkdtempSync(join(ROOT, "test", ".tmp-receiver-"));
  writeFileSync(join(dir, "receiver.mjs"), readmeBlock("js", 'from "express"'));
  const proc = spawn(process.execPath, ["receiver.mjs"], {
    cwd: dir,
    env: { ...process.env, POSTHORN_WEBHOOK_SECRET: secret, PORT: String(port) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = [];
  createInterface({ input: proc.stdout }).on("line", (l) => lines.push(l.trim()));
  t.after(() => {
    proc.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  await waitFor("the receiver to listen", () =>
    new Promise((resolve) => {
      const s = connect(port, "127.0.0.1", () => (s.end(), resolve(true)));
      s.on("error", () => resolve(false));
    }),
  );
  return { handled: (id) => lines.filter((l) => l.startsWith("handled ") && l.endsWith(id)) };
}

const only = (headers, prefix) => headers.filter(([k]) => k.toLowerCase().startsWith(prefix));

test("a delivery reaches the README receiver and verifies", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const port = await freePort();
  const hook = await client.webhooks.create({ url: `http://127.0.0.1:${port}/webhooks`, events: ["order.paid"], description: "node receiver" });
  assert.match(hook.secret, /^whsec_/);
  t.after(() => client.webhooks.delete(hook.id));
  const receiver = await startReceiver(t, hook.secret, port);

  const sent = await client.events.send("order.paid", { order: 42, note: "ünïcode" });
  assert.match(sent.id, /^evt_/);
  assert.equal(sent.deliveries, 1);
  await waitFor("the receiver to handle the event", () => receiver.handled(sent.id).length);
  const first = await waitFor("the attempt to succeed", async () =>
    (await client.deliveries.list({ event_id: sent.id })).data.find((d) => d.status === "succeeded"),
  );
  assert.deepEqual([first.attempt, first.response_status, first.endpoint_id], [1, 204, hook.id]);
  assert.ok(first.created_at instanceof Date);

  // What the server sent verifies under each scheme on its own.
  const detail = await client.deliveries.get(first.id);
  for (const prefix of ["webhook-", "x-botix-"]) {
    const event = verify(detail.payload, only(detail.request_headers, prefix), hook.secret);
    assert.equal(event.event_id, sent.id);
    assert.equal(event.data.note, "ünïcode");
  }

  // A manual retry is the same event again: answered 2xx, handled once.
  const again = await client.deliveries.retry(first.id);
  assert.equal(again.attempt, 2);
  await waitFor("the retry to succeed", async () => (await client.deliveries.get(again.id)).status === "succeeded");
  assert.equal(receiver.handled(sent.id).length, 1);

  // After a rotation deliveries carry both signatures: the receiver, still on the old
  // secret, accepts them, and so does the new secret.
  const rotated = await client.webhooks.rotateSecret(hook.id);
  assert.notEqual(rotated.secret, hook.secret);
  const later = await client.events.send("order.paid", { order: 43 });
  await waitFor("the post-rotation event", () => receiver.handled(later.id).length);
  const done = await waitFor("its attempt", async () =>
    (await client.deliveries.iter({ event_id: later.id }).toArray()).find((d) => d.status === "succeeded"),
  );
  const d = await client.deliveries.get(done.id);
  verify(d.payload, d.request_headers, rotated.secret);

  // A forged request is refused by the receiver.
  const forged = await fetch(`http://127.0.0.1:${port}/webhooks`, {
    method: "POST",
    body: '{"event_id":"evt_forged"}',
    headers: { "webhook-id": "evt_forged", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,AAAA" },
  });
  assert.equal(forged.status, 400);
});

test("an ed25519 endpoint's deliveries verify with its public key", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const port = await freePort();
  const hook = await client.webhooks.create({ url: `http://127.0.0.1:${port}/webhooks`, events: ["order.paid"], signature_scheme: "ed25519" });
  t.after(() => client.webhooks.delete(hook.id));
  assert.deepEqual([hook.signature_scheme, hook.secret], ["ed25519", undefined]);
  assert.match(hook.public_key, /^whpk_/);
  // The README's receiver, given the public key where the secret would go.
  const receiver = await startReceiver(t, hook.public_key, port);
  const sent = await client.events.send("order.paid", { order: 44, note: "ünïcode" });
  await waitFor("the receiver to handle the event", () => receiver.handled(sent.id).length);
  const done = await waitFor("the attempt to succeed", async () =>
    (await client.deliveries.list({ event_id: sent.id })).data.find((d) => d.status === "succeeded"),
  );
  const detail = await client.deliveries.get(done.id);
  const names = new Map(detail.request_headers.map(([k, v]) => [k.toLowerCase(), v]));
  assert.ok(!names.has("x-botix-signature"));
  assert.ok(names.get("webhook-signature").split(" ").every((e) => e.startsWith("v1a,")));
  assert.equal(verify(detail.payload, detail.request_headers, hook.public_key).event_id, sent.id);
});

test("webhooks CRUD and API errors", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const hook = await client.webhooks.create({ url: "https://example.com/crud", events: ["*"], headers: { "X-Token": "t" } });
  assert.deepEqual([hook.headers, hook.events], [["X-Token"], ["*"]]);
  const changed = await client.webhooks.update(hook.id, { events: ["a.b", "c.d"], enabled: false, description: "off" });
  assert.deepEqual([changed.events, changed.enabled, changed.description, changed.secret], [["a.b", "c.d"], false, "off", undefined]);
  assert.ok((await client.webhooks.list()).some((w) => w.id === hook.id));
  assert.deepEqual(await client.webhooks.get(hook.id), changed);
  await client.webhooks.delete(hook.id);
  await assert.rejects(client.webhooks.get(hook.id), (e) => e instanceof ApiError && e.status === 404 && e.code === "not_found");
  await assert.rejects(client.webhooks.create({ url: "ftp://example.com", events: ["*"] }), (e) => e instanceof ApiError && e.status === 422 && e.code === "invalid");
});

let pemFiles;
/** A self-signed certificate (CN=sdk-client, 30 days), its key and a key of another, made
 * once by the openssl command line so the tests need no crypto package. */
function pem() {
  if (pemFiles) return pemFiles;
  const dir = mkdtempSync(join(tmpdir(), "posthorn-pem-"));
  const curve = ["-pkeyopt", "ec_paramgen_curve:prime256v1"];
  try {
    for (const args of [
      ["req", "-x509", "-newkey", "ec", ...curve, "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "30", "-subj", "/CN=sdk-client"],
      ["genpkey", "-algorithm", "EC", ...curve, "-out", "other.pem"],
    ]) {
      execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
    }
    pemFiles = Object.fromEntries(["cert", "key", "other"].map((n) => [n, readFileSync(join(dir, `${n}.pem`), "utf8")]));
    return pemFiles;
  } catch (e) {
    if (e.code === "ENOENT") throw new Error("openssl is not on PATH: the client certificate tests need it");
    throw e;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("a client certificate is set, shown and removed", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const { cert, key, other } = pem();
  const hook = await client.webhooks.create({ url: "https://example.com/mtls-ts", events: ["*"], client_certificate: { cert, key } });
  t.after(() => client.webhooks.delete(hook.id));
  const shown = hook.client_certificate;
  assert.equal(shown.subject, "CN=sdk-client");
  assert.ok(shown.not_after instanceof Date);
  const days = (shown.not_after.getTime() - Date.now()) / 86_400_000;
  assert.ok(days > 28 && days <= 30, String(days));
  assert.deepEqual((await client.webhooks.get(hook.id)).client_certificate, shown);
  // Absent leaves it as it is; null removes it.
  assert.deepEqual((await client.webhooks.update(hook.id, { description: "kept" })).client_certificate, shown);
  assert.equal((await client.webhooks.update(hook.id, { client_certificate: null })).client_certificate, null);
  assert.equal((await client.webhooks.get(hook.id)).client_certificate, null);
  assert.deepEqual((await client.webhooks.update(hook.id, { client_certificate: { cert, key } })).client_certificate, shown);
  await assert.rejects(
    client.webhooks.create({ url: "https://example.com/mtls-ts", events: ["*"], client_certificate: { cert, key: other } }),
    (e) =>
      e instanceof ApiError &&
      e.status === 422 &&
      e.code === "invalid" &&
      e.apiMessage === "client_certificate: the key does not belong to the first certificate",
  );
});

test("a filter decides which events an endpoint gets", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const kind = "payment.filtered_ts";
  const invalid = (e) => e instanceof ApiError && e.status === 422 && e.code === "invalid";
  // Refused when saved, the message saying where.
  await assert.rejects(
    client.webhooks.create({ url: "https://example.com/filtered-ts", events: [kind], filter: "data.amount >" }),
    (e) => invalid(e) && e.apiMessage.startsWith("filter: ") && e.apiMessage.includes("at 1:14"),
  );
  const hook = await client.webhooks.create({ url: "https://example.com/filtered-ts", events: [kind], filter: "data.amount > 1000" });
  t.after(() => client.webhooks.delete(hook.id));
  assert.equal(hook.filter, "data.amount > 1000");
  assert.equal((await client.webhooks.get(hook.id)).filter, "data.amount > 1000");
  await assert.rejects(client.webhooks.update(hook.id, { filter: "data.amount >" }), invalid);

  // Too small: no attempt, and the event says which endpoint it skipped and why.
  const small = await client.events.send(kind, { amount: 5 });
  assert.equal(small.deliveries, 0);
  const got = await client.events.get(small.id);
  assert.equal(got.deliveries, 0);
  assert.deepEqual(got.filtered_out, [{ endpoint_id: hook.id, reason: "the filter was false" }]);
  const listed = await waitFor("the event in the list", async () =>
    (await client.events.list({ type: kind })).data.find((e) => e.id === small.id),
  );
  assert.deepEqual(listed.filtered_out, got.filtered_out);
  const big = await client.events.send(kind, { amount: 5000 });
  assert.equal(big.deliveries, 1);
  const gotBig = await client.events.get(big.id);
  assert.deepEqual([gotBig.deliveries, gotBig.filtered_out], [1, []]);

  // Absent leaves it as it is; null removes it.
  assert.equal((await client.webhooks.update(hook.id, { description: "kept" })).filter, "data.amount > 1000");
  assert.equal((await client.webhooks.update(hook.id, { filter: "data.amount > 10" })).filter, "data.amount > 10");
  assert.equal((await client.webhooks.update(hook.id, { filter: null })).filter, null);
  assert.equal((await client.webhooks.get(hook.id)).filter, null);
  assert.equal((await client.events.send(kind, { amount: 5 })).deliveries, 1);
});

test("an event type's schema refuses data that fails it", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const kind = "order.paid";
  const schema = { type: "object", required: ["amount"], properties: { amount: { type: "integer", minimum: 1 } } };
  const invalid = (e) => e instanceof ApiError && e.status === 422 && e.code === "invalid";
  // Other tests send `order.paid` events of their own shape.
  t.after(() => client.eventTypes.deleteSchema(kind).catch((e) => assert.equal(e.status, 404)));

  const first = await client.eventTypes.setSchema(kind, schema);
  assert.deepEqual([first.event, first.version, first.schema], [kind, 1, schema]);
  assert.ok(first.updated_at instanceof Date && !Number.isNaN(first.updated_at.getTime()));
  assert.deepEqual(await client.eventTypes.getSchema(kind), schema);

  // Data that fails it is refused, the message naming the path and the rule.
  await assert.rejects(
    client.events.send(kind, { amount: 0 }),
    (e) => invalid(e) && e.apiMessage.startsWith("data.amount:") && e.apiMessage.includes("minimum"),
  );
  assert.match((await client.events.send(kind, { amount: 5 })).id, /^evt_/);

  const again = await client.eventTypes.setSchema(kind, schema);
  assert.deepEqual([again.version, again.schema], [2, schema]);
  assert.ok(again.updated_at >= first.updated_at);
  // Nothing is fetched: only `#…` references.
  await assert.rejects(
    client.eventTypes.setSchema(kind, { $ref: "https://example.com/x.json" }),
    (e) => invalid(e) && e.apiMessage.startsWith("schema"),
  );
  assert.deepEqual(await client.eventTypes.getSchema(kind), schema);

  await client.eventTypes.deleteSchema(kind);
  await assert.rejects(client.eventTypes.getSchema(kind), (e) => e instanceof ApiError && e.status === 404 && e.code === "not_found");
  assert.match((await client.events.send(kind, { amount: 0 })).id, /^evt_/);
});

test("an ordering key is sent and read back", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const hook = await client.webhooks.create({ url: "https://example.com/ordered-ts", events: ["order.keyed_ts"] });
  const sent = await client.events.send("order.keyed_ts", { n: 1 }, { orderingKey: "customer-8" });
  assert.equal((await client.events.get(sent.id)).ordering_key, "customer-8");
  const page = await client.deliveries.list({ ordering_key: "customer-8" });
  // Its attempts (a retry may already be queued: example.com does not answer here).
  assert.ok(page.data.length > 0);
  assert.deepEqual([...new Set(page.data.map((d) => `${d.event_id} ${d.ordering_key}`))], [`${sent.id} customer-8`]);
  await client.webhooks.delete(hook.id);
});

test("the iterator walks 250 events, each exactly once", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const client = new Client(env(t, "POSTHORN_TEST_KEY_BUSINESS"), { baseUrl: base });
  const kind = `walk.node_${Date.now()}`;
  const sent = [];
  for (let batch = 0; batch < 250; batch += 10) {
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => client.events.send(kind, { n: batch + i })));
    sent.push(...ids.map((r) => r.id));
  }
  assert.equal(new Set(sent).size, 250);

  const first = await client.events.list({ type: kind, limit: 100 });
  assert.equal(first.data.length, 100);
  assert.ok(first.has_more && first.next_cursor);

  let it = client.events.iter({ type: kind, pageSize: 100 });
  const seen = [];
  for await (const e of it) seen.push(e.id);
  // Rows of transactions still open are held back; go on from the stored cursor.
  const deadline = Date.now() + 30_000;
  while (seen.length < 250 && Date.now() < deadline) {
    await sleep(500);
    it = client.events.iter({ type: kind, cursor: it.cursor, pageSize: 100 });
    for await (const e of it) seen.push(e.id);
  }
  assert.equal(seen.length, 250);
  assert.deepEqual(new Set(seen), new Set(sent));
  const seventh = await client.events.get(sent[7]);
  assert.deepEqual(seventh.data, { n: 7 });
  assert.deepEqual(await client.events.iter({ type: kind, cursor: it.cursor }).toArray(), []);
});

async function sixtyCalls(key, baseUrl, rateLimitThreshold) {
  const log = [];
  const client = new Client(key, { baseUrl, rateLimitThreshold, onResponse: (a) => log.push(a) });
  const results = [];
  for (let n = 0; n < 60; n++) results.push(await client.events.send("rate.test", { n }));
  return { results, log };
}

/** After a 429 no request goes out before Retry-After has passed; a proactive client also
 * sends none between a reply that spent the quota and the reset. */
function assertNoCallBeforeItsWait(log, proactive) {
  for (let i = 1; i < log.length; i++) {
    const [prev, next] = [log[i - 1], log[i]];
    if (prev.status === 429) {
      // Node's timers may fire a millisecond before their time: 10 ms of slack, far below
      // the whole second of Retry-After's resolution.
      assert.ok(next.sentAt + 0.01 >= prev.receivedAt + Number(prev.headers["retry-after"]), JSON.stringify([prev, next]));
    }
    if (proactive && prev.headers["x-ratelimit-remaining"] === "0") {
      assert.ok(next.sentAt >= Number(prev.headers["x-ratelimit-reset"]), JSON.stringify([prev, next]));
    }
  }
}

test("sixty calls on a trial key all succeed and none goes early", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  // Both at once, on two trial projects: the default client, which waits for the reset
  // when the quota is spent, and one that only reacts to 429s.
  const [p, r] = await Promise.all([
    sixtyCalls(env(t, "POSTHORN_TEST_KEY_TRIAL_A"), base, 1),
    sixtyCalls(env(t, "POSTHORN_TEST_KEY_TRIAL_B"), base, 0),
  ]);
  for (const [{ results, log }, proactive] of [[p, true], [r, false]]) {
    assert.equal(results.length, 60);
    assert.equal(new Set(results.map((x) => x.id)).size, 60);
    assert.equal(log.filter((a) => a.status === 202).length, 60);
    assert.ok(log.every((a) => a.status === 202 || a.status === 429));
    assertNoCallBeforeItsWait(log, proactive);
  }
  // Once the default client has seen the quota it never earns a 429.
  const firstOk = p.log.findIndex((a) => a.status === 202);
  assert.equal(p.log.slice(firstOk).filter((a) => a.status === 429).length, 0, "the default client earned a 429");
  assert.ok(r.log.some((a) => a.status === 429), "60 calls at 30/min must meet a 429");
});

// Models (the interfaces of src/models.ts, read with the TypeScript compiler) against
// their schemas in /public/v1/openapi.json.
function modelFields() {
  const ts = createRequire(import.meta.url)("typescript");
  const source = ts.createSourceFile("models.ts", readFileSync(join(ROOT, "src", "models.ts"), "utf8"), ts.ScriptTarget.ES2022, true);
  const aliases = {};
  const interfaces = {};
  for (const st of source.statements) {
    if (ts.isTypeAliasDeclaration(st)) aliases[st.name.text] = st.type;
    if (ts.isInterfaceDeclaration(st)) interfaces[st.name.text] = st;
  }
  const types = (node) => {
    if (ts.isUnionTypeNode(node)) return new Set(node.types.flatMap((n) => [...types(n)]));
    if (ts.isArrayTypeNode(node) || ts.isTupleTypeNode(node)) return new Set(["array"]);
    if (ts.isLiteralTypeNode(node)) {
      if (node.literal.kind === ts.SyntaxKind.NullKeyword) return new Set(["null"]);
      if (ts.isStringLiteral(node.literal)) return new Set(["string"]);
    }
    if (ts.isTypeReferenceNode(node)) {
      const name = node.typeName.getText();
      if (name === "Date") return new Set(["date-time"]);
      if (name === "Record") return new Set(["object"]);
      if (aliases[name]) return types(aliases[name]);
      if (interfaces[name]) return new Set([`object ${name}`]);
    }
    const keyword = { [ts.SyntaxKind.StringKeyword]: "string", [ts.SyntaxKind.NumberKeyword]: "number", [ts.SyntaxKind.BooleanKeyword]: "boolean", [ts.SyntaxKind.UnknownKeyword]: "any" }[node.kind];
    if (!keyword) throw new Error(`unmapped type ${node.getText()}`);
    return new Set([keyword]);
  };
  const fields = (name) => {
    const decl = interfaces[name];
    const out = {};
    for (const clause of decl.heritageClauses ?? []) for (const base of clause.types) Object.assign(out, fields(base.expression.getText()));
    for (const m of decl.members) out[m.name.getText()] = { types: types(m.type), optional: Boolean(m.questionToken) };
    return out;
  };
  return fields;
}

function schemaProperties(doc, schema) {
  if (schema.$ref) return schemaProperties(doc, doc.components.schemas[schema.$ref.split("/").pop()]);
  let props = { ...(schema.properties ?? {}) };
  let required = new Set(schema.required ?? []);
  for (const part of schema.allOf ?? []) {
    const [p, r] = schemaProperties(doc, part);
    props = { ...props, ...p };
    required = new Set([...required, ...r]);
  }
  return [props, required];
}

// Models by the name of their schema; a nested object names its model.
const MODELS = {
  Webhook: "Webhook",
  ClientCertificateOut: "ClientCertificate",
  Destination: "Destination",
  EventAccepted: "EventAccepted",
  Event: "Event",
  FilteredOut: "FilteredOut",
  Delivery: "Delivery",
  DeliveryDetail: "DeliveryDetail",
  Replay: "Replay",
  Erasure: "Erasure",
  EventTypeSchema: "EventTypeSchema",
};

function jsonTypes(doc, prop) {
  const ref = prop.$ref?.split("/").pop();
  if (MODELS[ref]) return new Set([`object ${MODELS[ref]}`]);
  if (ref) return jsonTypes(doc, doc.components.schemas[ref]);
  if (prop.oneOf) return new Set(prop.oneOf.flatMap((p) => [...jsonTypes(doc, p)]));
  if (!prop.type) return new Set(["any"]);
  const list = Array.isArray(prop.type) ? prop.type : [prop.type];
  // JavaScript has one number type for JSON's integer and number.
  return new Set(list.map((t) => (t === "string" && prop.format === "date-time" ? "date-time" : t === "integer" ? "number" : t)));
}

test("the models match the OpenAPI document", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const doc = await (await fetch(`${base}/public/v1/openapi.json`)).json();
  const fields = modelFields();
  for (const [schemaName, name] of Object.entries(MODELS)) {
    const [props, required] = schemaProperties(doc, { $ref: `#/components/schemas/${schemaName}` });
    const model = fields(name);
    assert.deepEqual(Object.keys(model).sort(), Object.keys(props).sort(), name);
    for (const [field, prop] of Object.entries(props)) {
      assert.deepEqual([...model[field].types].sort(), [...jsonTypes(doc, prop)].sort(), `${name}.${field}`);
      assert.equal(model[field].optional, !required.has(field), `${name}.${field} optional`);
    }
  }
  // Page<T>{data, has_more, next_cursor} is the envelope {data, meta{next_cursor, has_more}}.
  for (const page of ["EventPage", "DeliveryPage"]) {
    const [props, required] = schemaProperties(doc, { $ref: `#/components/schemas/${page}` });
    assert.deepEqual([...required].sort(), ["data", "meta"]);
    const [meta] = schemaProperties(doc, props.meta);
    assert.deepEqual(["data", ...Object.keys(meta)].sort(), Object.keys(fields("Page")).sort());
  }
});
