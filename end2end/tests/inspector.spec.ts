import { test, expect } from "@playwright/test";
import { createHmac } from "node:crypto";
import { hydrated } from "./helpers";

test("a bin made in the page shows requests live, expands them, and verifies a signature", async ({ page, request }) => {
  await page.goto("/inspector");
  await hydrated(page);
  await page.getByTestId("create-bin-button").click();
  await page.waitForURL(/\/inspector\/[0-9a-f]{32}$/);
  await hydrated(page);
  const url = (await page.getByTestId("bin-url").textContent())!.trim();
  await expect(page.getByTestId("request-count")).toContainText("0 requests");

  // Another client sends a signed request; it appears without a reload.
  const secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
  const body = JSON.stringify({ event_id: "evt_test", event: "payment.succeeded", data: { amount: 1 } });
  const ts = Math.floor(Date.now() / 1000);
  const botix = "sha256=" + createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex");
  const key = Buffer.from(secret.slice(6), "base64");
  const std = "v1," + createHmac("sha256", key).update(`evt_test.${ts}.${body}`).digest("base64");
  const res = await request.post(`${url}/hooks?via=test`, {
    data: body,
    headers: {
      "content-type": "application/json", "x-botix-signature": botix, "x-botix-timestamp": String(ts),
      "webhook-id": "evt_test", "webhook-timestamp": String(ts), "webhook-signature": std, "x-event-id": "evt_test",
    },
  });
  expect(res.status()).toBe(200);
  await expect(page.getByTestId("request-count")).toContainText("1 request (newest first");
  await request.get(`${url}/second`);
  await expect(page.getByTestId("bin-request")).toHaveCount(2, { timeout: 10_000 });
  await expect(page.getByTestId("bin-request").first()).toHaveAttribute("data-method", "GET");

  await page.getByTestId("bin-request").nth(1).locator(".reqline").click();
  const detail = page.getByTestId("bin-request-detail");
  await expect(detail.getByTestId("bin-request-body")).toContainText('"amount": 1');
  await expect(detail.getByTestId("timestamp-fresh")).toHaveAttribute("data-fresh", "true");

  await page.getByTestId("secret-input").fill("whsec_d3JvbmcgYnV0IGJhc2U2NA==");
  await expect(detail.getByTestId("signature-result")).toHaveAttribute("data-valid", "false");
  await page.getByTestId("secret-input").fill(secret);
  await expect(detail.getByTestId("signature-result")).toHaveAttribute("data-valid", "true");
  await expect(detail.getByTestId("signature-result")).toContainText("X-Botix-Signature: valid · webhook-signature: valid");
});

test("an unknown bin says so and links to a new one", async ({ page, request }) => {
  const res = await request.post("/r/ffffffffffffffffffffffffffffffff");
  expect(res.status()).toBe(404);
  await page.goto("/inspector/ffffffffffffffffffffffffffffffff");
  await hydrated(page);
  await expect(page.getByRole("heading", { name: "Bin not found" })).toBeVisible();
  await expect(page.getByRole("link", { name: "Create a new one" })).toBeVisible();
});
