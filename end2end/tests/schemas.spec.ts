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
