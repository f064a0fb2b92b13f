// The operator client against a real `posthorn serve` on a fresh database (started by sdk/test.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { Client, Operator, ApiError } from "../dist/esm/index.js";
import { ROOT, env } from "./helpers.mjs";

const unique = (prefix) => `${prefix}-${randomUUID().slice(0, 12)}`;
const utcToday = () => new Date().toISOString().slice(0, 10);

/** The call rejects with an ApiError of this status and code; returns the error. */
async function refused(status, code, promise) {
  let error;
  await assert.rejects(promise, (e) => ((error = e), e instanceof ApiError && e.status === status && e.code === code));
  return error;
}

function setup(t) {
  const base = env(t, "POSTHORN_TEST_URL");
  const key = base && env(t, "POSTHORN_OPERATOR_KEY");
  return base && key ? { base, op: new Operator(key, { baseUrl: base }) } : null;
}

test("a project from creation to deletion", async (t) => {
  const s = setup(t);
  if (!s) return;
  const { base, op } = s;
  const uid = unique("node-customer");
  const project = await op.projects.create({
    name: "Node customer",
    uid,
    plan: "business",
    limits: { endpoints: 5, concurrent_erasures: 2 },
    frame_ancestors: ["https://app.example.com"],
    brand: { name: "Acme", accent: "#4f46e5" },
  });
  assert.deepEqual([project.uid, project.name, project.plan, project.limits.endpoints], [uid, "Node customer", "business", 5]);
  assert.equal(project.limits.concurrent_erasures, 2);
  assert.deepEqual(project.frame_ancestors, ["https://app.example.com"]);
  assert.deepEqual(project.brand, { name: "Acme", accent: "#4f46e5", logo_url: null });
  assert.ok(project.created_at instanceof Date);

  // Found by the operator's own id; an unknown one finds nothing.
  assert.deepEqual(await op.projects.find(uid), project);
  assert.deepEqual(await op.projects.get(project.id), project);
  assert.equal(await op.projects.find(unique("node-nobody")), null);

  // Updated: only the fields given change; brand and frame_ancestors are replaced whole.
  const changed = await op.projects.update(project.id, {
    name: "Node customer, renamed",
    frame_ancestors: ["https://portal.example.com", "http://localhost:8080"],
    brand: { accent: "#112233", logo_url: "https://cdn.example.com/logo.png" },
  });
  assert.equal(changed.name, "Node customer, renamed");
  assert.deepEqual(changed.frame_ancestors, ["https://portal.example.com", "http://localhost:8080"]);
  assert.deepEqual(changed.brand, { name: null, accent: "#112233", logo_url: "https://cdn.example.com/logo.png" });
  assert.deepEqual([changed.uid, changed.plan, changed.limits], [uid, "business", project.limits]);
  assert.deepEqual(await op.projects.get(project.id), changed);

  // A second project with the same uid conflicts; a wildcard is not an origin.
  await refused(409, "conflict", op.projects.create({ name: "Node duplicate", uid }));
  const bad = await refused(422, "invalid", op.projects.update(project.id, { frame_ancestors: ["https://*.example.com"] }));
  assert.match(bad.apiMessage, /frame_ancestors/);
  await refused(422, "invalid", op.projects.create({ name: unique("node-bad"), frame_ancestors: ["https://*.example.com"] }));
  assert.deepEqual(await op.projects.get(project.id), changed);

  // A key minted for the project opens the public API, until it is revoked.
  const today = utcToday();
  const key = await op.apiKeys.create(project.id, "node production");
  assert.equal(key.name, "node production");
  assert.ok(key.key.startsWith("phk_") && key.key.startsWith(key.prefix));
  assert.ok(key.created_at instanceof Date);
  const client = new Client(key.key, { baseUrl: base });
  const hook = await client.webhooks.create({ url: "https://example.com/operator-node", events: ["order.paid"] });
  const sent = await client.events.send("order.paid", { order: 1 });
  assert.equal(sent.deliveries, 1);
  assert.deepEqual((await client.webhooks.list()).map((w) => w.id), [hook.id]);
  await op.apiKeys.revoke(project.id, key.id);
  await refused(401, "unauthorized", client.events.send("order.paid", { order: 2 }));
  await op.apiKeys.revoke(project.id, key.id); // a repeat (as after a lost answer) is harmless
  await refused(404, "not_found", op.apiKeys.revoke(project.id, key.id + 1e9));

  // Usage counts the event on its UTC day (given as text or as a Date).
  const usage = await op.usage.get(project.id, { since: today, until: new Date() });
  assert.deepEqual([usage.project_id, usage.since, usage.until], [project.id, today, utcToday()]);
  assert.equal(usage.events, 1);
  assert.deepEqual(Object.keys(usage.attempts).sort(), ["dead_letter", "failed", "succeeded"]);
  assert.deepEqual(usage.days.map((d) => [d.day, d.events]), [[today, 1]]);
  await refused(422, "invalid", op.usage.get(project.id, { since: "yesterday" }));

  // A portal link, single-use, expiring when asked.
  const before = Date.now();
  const link = await op.portalLinks.create(project.id, { user: { id: "user-7", email: "ana@example.com", name: "Ana" }, role: "member", expires_in: 600 });
  assert.ok(link.url.startsWith(`${base}/portal/`), link.url);
  assert.ok(link.expires_at instanceof Date);
  const lifetime = (link.expires_at.getTime() - before) / 1000;
  assert.ok(lifetime >= 590 && lifetime <= 610, String(lifetime));
  const viewer = await op.portalLinks.create(project.id, { user: { id: "user-8" }, role: "viewer" });
  assert.ok(viewer.url.includes("/portal/") && viewer.url !== link.url);
  await refused(422, "invalid", op.portalLinks.create(project.id, { user: { id: "user-9" }, role: "admin" }));

  // Deleted: gone at once, and so is everything under it.
  await op.projects.delete(project.id);
  await refused(404, "not_found", op.projects.get(project.id));
  await refused(404, "not_found", op.projects.delete(project.id));
  await refused(404, "not_found", op.usage.get(project.id));
  assert.equal(await op.projects.find(uid), null);
});

test("the list pages through every project once", async (t) => {
  const s = setup(t);
  if (!s) return;
  const { op } = s;
  const created = [];
  for (let i = 0; i < 3; i++) created.push(await op.projects.create({ name: unique("node-page") }));
  t.after(() => Promise.all(created.map((p) => op.projects.delete(p.id))));
  const mine = new Set(created.map((p) => p.id));

  const first = await op.projects.list({ limit: 2 });
  assert.equal(first.data.length, 2);
  assert.ok(first.has_more && first.next_cursor);
  const second = await op.projects.list({ limit: 2, cursor: first.next_cursor });
  assert.ok(second.data.every((p) => !first.data.some((q) => q.id === p.id)));

  const it = op.projects.iter({ pageSize: 2 });
  const ids = (await it.toArray()).map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length);
  assert.deepEqual(ids.filter((id) => mine.has(id)), created.map((p) => p.id));
  assert.ok(it.cursor);
  const later = await op.projects.iter({ cursor: it.cursor, pageSize: 2 }).toArray();
  assert.ok(later.every((p) => !mine.has(p.id)));
  await refused(422, "invalid", op.projects.list({ limit: 0 }));
});

test("a wrong operator key is refused", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  // A made-up key, and a project's API key, which is not an operator key either.
  for (const key of ["pho_" + "x".repeat(43), env(t, "POSTHORN_TEST_KEY_BUSINESS")]) {
    await refused(401, "unauthorized", new Operator(key, { baseUrl: base }).projects.list());
  }
});

// The operator models (interfaces of src/models.ts, read with the TypeScript compiler)
// against their schemas in /operator/v1/openapi.json.
const MODELS = {
  Project: "Project",
  EffectiveLimits: "EffectiveLimits",
  BrandOut: "Brand",
  CreatedKey: "CreatedKey",
  Usage: "Usage",
  UsageDay: "UsageDay",
  AttemptCounts: "AttemptCounts",
  PortalLink: "PortalLink",
};

function interfaces() {
  const ts = createRequire(import.meta.url)("typescript");
  const source = ts.createSourceFile("models.ts", readFileSync(join(ROOT, "src", "models.ts"), "utf8"), ts.ScriptTarget.ES2022, true);
  const aliases = {};
  const decls = {};
  for (const st of source.statements) {
    if (ts.isTypeAliasDeclaration(st)) aliases[st.name.text] = st.type;
    if (ts.isInterfaceDeclaration(st)) decls[st.name.text] = st;
  }
  const types = (node) => {
    if (ts.isUnionTypeNode(node)) return node.types.flatMap(types);
    if (ts.isArrayTypeNode(node)) return ["array"];
    if (ts.isLiteralTypeNode(node)) return [node.literal.kind === ts.SyntaxKind.NullKeyword ? "null" : "string"];
    if (ts.isTypeReferenceNode(node)) {
      const name = node.typeName.getText();
      if (name === "Date") return ["date-time"];
      if (aliases[name]) return types(aliases[name]);
      if (decls[name]) return [`object ${name}`];
    }
    const keyword = { [ts.SyntaxKind.StringKeyword]: "string", [ts.SyntaxKind.NumberKeyword]: "number", [ts.SyntaxKind.BooleanKeyword]: "boolean" }[node.kind];
    if (!keyword) throw new Error(`unmapped type ${node.getText()}`);
    return [keyword];
  };
  return (name) =>
    Object.fromEntries(decls[name].members.map((m) => [m.name.getText(), { types: [...new Set(types(m.type))].sort(), optional: Boolean(m.questionToken) }]));
}

const resolve = (doc, schema) => {
  while (schema.$ref) schema = doc.components.schemas[schema.$ref.split("/").pop()];
  return schema;
};

/** JSON types as the models spell them: integers are numbers, dates stay strings, a nested object names its model. */
function jsonTypes(doc, prop) {
  if (prop.$ref) return [`object ${MODELS[prop.$ref.split("/").pop()]}`];
  const list = Array.isArray(prop.type) ? prop.type : [prop.type];
  return list.map((t) => (t === "integer" ? "number" : t === "string" && prop.format === "date-time" ? "date-time" : t)).sort();
}

test("the operator models match the OpenAPI document", async (t) => {
  const base = env(t, "POSTHORN_TEST_URL");
  if (!base) return;
  const doc = await (await fetch(`${base}/operator/v1/openapi.json`)).json();
  const fields = interfaces();
  for (const [schemaName, model] of Object.entries(MODELS)) {
    const schema = resolve(doc, { $ref: `#/components/schemas/${schemaName}` });
    const required = new Set(schema.required ?? []);
    const have = fields(model);
    assert.deepEqual(Object.keys(have).sort(), Object.keys(schema.properties).sort(), model);
    for (const [field, prop] of Object.entries(schema.properties)) {
      assert.deepEqual(have[field].types, jsonTypes(doc, prop), `${model}.${field}`);
      assert.equal(have[field].optional, !required.has(field), `${model}.${field} optional`);
    }
  }
  // Page<T>{data, has_more, next_cursor} is the list's envelope as it is.
  const listing = doc.paths["/projects"].get.responses["200"].content["application/json"].schema;
  const props = resolve(doc, listing).allOf.flatMap((part) => Object.keys(resolve(doc, part).properties));
  assert.deepEqual(props.sort(), ["data", "has_more", "next_cursor"]);
  // Every operation of the document is one the client calls.
  const ops = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`));
  assert.deepEqual(ops.sort(), [
    "DELETE /projects/{id}",
    "DELETE /projects/{id}/api-keys/{key_id}",
    "GET /projects",
    "GET /projects/{id}",
    "GET /projects/{id}/usage",
    "PATCH /projects/{id}",
    "POST /projects",
    "POST /projects/{id}/api-keys",
    "POST /projects/{id}/portal-links",
  ]);
});
