import { test, expect } from "@playwright/test";
import { readFileSync } from "node:fs";
import { BASE_URL } from "./env";
import { createProject, hydrated, login } from "./helpers";

const SCHEMA = JSON.stringify({
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  required: ["amount"],
  properties: { amount: { type: "integer", minimum: 1 }, note: { type: "string", description: "<script>alert(1)</script>" } },
});

async function putSchema(request: any, key: string, type: string, body: string) {
  return request.fetch(`${BASE_URL}/public/v1/event-types/${type}/schema`, {
    method: "PUT", data: body, headers: { Authorization: `Bearer ${key}`, "content-type": "application/json" },
  });
}

test("the catalogue shows each type's schema as text and offers it for download; another project's is not found", async ({ page, request }) => {
  const p = createProject("Schemas");
  const other = createProject("Other schemas");
  expect((await putSchema(request, p.apiKey, "order.paid", SCHEMA)).status()).toBe(201);
  expect((await putSchema(request, other.apiKey, "order.secret", "{}")).status()).toBe(201);
  // Refused at ingest with the path: what the catalogue documents is enforced.
  const refused = await request.fetch(`${BASE_URL}/public/v1/events`, {
    method: "POST", data: { event: "order.paid", data: { amount: 0 } }, headers: { Authorization: `Bearer ${p.apiKey}` },
  });
  expect(refused.status()).toBe(422);
  expect((await refused.json()).error.message).toContain("data.amount");

  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/events");
  await hydrated(page);
  const row = page.getByTestId("event-type-row").filter({ hasText: "order.paid" });
  await expect(row.getByTestId("event-schema")).toContainText("schema v1");
  await row.getByTestId("event-schema").locator("summary").click();
  await expect(row.getByTestId("event-schema")).toContainText('"minimum": 1');
  await expect(row.getByTestId("event-schema")).toContainText("<script>alert(1)</script>");
  await expect(page.locator("script", { hasText: "alert(1)" })).toHaveCount(0);
  await page.screenshot({ path: "../docs/screenshots/event-type-schema.png" });

  const [download] = await Promise.all([
    page.waitForEvent("download"),
    row.getByTestId("download-schema").click(),
  ]);
  expect(download.suggestedFilename()).toBe("order.paid.schema.json");
  const saved = readFileSync(await download.path(), "utf8");
  expect(JSON.parse(saved)).toEqual(JSON.parse(SCHEMA));

  // The other project's schema, asked for by its project id: not found, like nothing.
  const theirs = await page.request.get(`/developers/events/schema/order.secret?project=${other.projectId}`);
  expect(theirs.status()).toBe(404);
  await expect(page.getByTestId("event-type-row").filter({ hasText: "order.secret" })).toHaveCount(0);
});

test("an owner writes a schema in the catalogue's editor: checked as they type, tried on the latest event, saved, enforced and removed", async ({ page, request }) => {
  const p = createProject("Schema editor");
  const sent = await request.fetch(`${BASE_URL}/public/v1/events`, {
    method: "POST", data: { event: "order.paid", data: { amount: 5, note: "first" } }, headers: { Authorization: `Bearer ${p.apiKey}` },
  });
  expect(sent.status()).toBe(202);
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/events");
  await hydrated(page);
  await expect(page.getByTestId("catalogue-help")).toContainText("POST /public/v1/events");
  const row = page.getByTestId("event-type-row").filter({ hasText: "order.paid" });
  await expect(row.getByTestId("edit-schema")).toHaveText("add");
  await row.getByTestId("edit-schema").click();
  const editor = page.getByTestId("schema-editor");
  const status = page.getByTestId("schema-status");
  // A first draft from the latest event, which passes it; the event is shown beside it.
  await expect(editor).toBeFocused();
  await expect(editor).toHaveValue(/"amount": \{\s*"type": "integer"/);
  await expect(page.getByTestId("schema-example")).toContainText('"note": "first"');
  await expect(status).toHaveText("A valid schema; the latest event passes it.");

  // Not JSON: said at once, in words, and nothing can be saved.
  await editor.fill('{"type": ');
  await expect(status).toContainText("Not JSON yet: EOF while parsing");
  await expect(page.getByTestId("save-schema")).toBeDisabled();
  // A schema the server would refuse, with its reason.
  await editor.fill('{"$ref": "https://example.com/other.json"}');
  await expect(status).toContainText("Would be refused");
  await expect(status).toContainText("only references within the schema");
  await expect(page.getByTestId("save-schema")).toBeDisabled();
  // Valid, but the latest event fails it: said with the path, and it may still be saved.
  await editor.fill(JSON.stringify({ type: "object", properties: { amount: { type: "integer", minimum: 10 } } }));
  await expect(status).toContainText("the latest event fails it: data.amount");
  await editor.fill(JSON.stringify({ type: "object", required: ["amount"], properties: { amount: { type: "integer", minimum: 1 }, note: { type: "string" } } }, null, 2));
  await expect(status).toHaveText("A valid schema; the latest event passes it.");
  await page.getByTestId("save-schema").click();
  await expect(page.getByTestId("schema-panel")).toHaveCount(0);
  await expect(row.getByTestId("event-schema")).toContainText("schema v1");
  // Shown readable: the schema scrolls instead of breaking words.
  await row.getByTestId("event-schema").locator("summary").click();
  const pre = row.getByTestId("event-schema").locator("pre");
  await expect(pre).toContainText('"minimum": 1');
  expect(await pre.evaluate((el) => getComputedStyle(el).wordBreak)).toBe("normal");

  // Enforced at ingest.
  const refused = await request.fetch(`${BASE_URL}/public/v1/events`, {
    method: "POST", data: { event: "order.paid", data: { amount: 0 } }, headers: { Authorization: `Bearer ${p.apiKey}` },
  });
  expect(refused.status()).toBe(422);

  // Reopened on the stored schema; Escape closes and gives the focus back.
  await row.getByTestId("edit-schema").click();
  await expect(editor).toHaveValue(/"minimum": 1/);
  await editor.press("Escape");
  await expect(page.getByTestId("schema-panel")).toHaveCount(0);
  await expect(row.getByTestId("edit-schema")).toBeFocused();
  // Removed, after a confirmation.
  await row.getByTestId("edit-schema").click();
  await page.getByTestId("remove-schema").click();
  await page.getByTestId("confirm-action").click();
  await expect(page.getByTestId("schema-panel")).toHaveCount(0);
  await expect(row.getByTestId("event-schema")).toHaveCount(0);
  await expect(row.getByTestId("edit-schema")).toHaveText("add");
});
