import { test, expect } from "@playwright/test";
import { execSync } from "node:child_process";
import { createProject, hydrated, login, api, webhooksPageOfNewProject } from "./helpers";

test("API keys: created and shown once, listed by prefix, revoked at once", async ({ page, request }) => {
  const p = createProject("Keys");
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/keys");
  await hydrated(page);
  await expect(page.getByTestId("key-row")).toHaveCount(1);
  await page.getByTestId("key-name-input").fill("deploy-bot");
  await page.getByTestId("create-key-button").click();
  const key = (await page.getByTestId("new-key-value").textContent())!.trim();
  expect(key).toMatch(/^phk_/);
  await expect(page.getByTestId("key-row")).toHaveCount(2);
  expect((await api(request, key, "GET", "/webhooks")).status()).toBe(200);
  // First use: the curl shown, with the key and this server filled in, sends an event.
  const curl = (await page.getByTestId("first-use-curl").textContent())!;
  expect(curl).toContain(key);
  const answer = execSync(curl.replace(/^curl /, "curl -s -w '\\n%{http_code}' "), { encoding: "utf8", shell: "/bin/bash" });
  expect(answer.trim().split("\n").pop()).toBe("202");
  expect(JSON.parse(answer.trim().split("\n")[0]).id).toMatch(/^evt_/);
  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId("new-key-value")).toHaveCount(0);
  await expect(page.getByText(key)).toHaveCount(0);
  const row = page.getByTestId("key-row").filter({ hasText: "deploy-bot" });
  await row.getByTestId("revoke-key-button").click();
  await row.getByTestId("confirm-action").click();
  await expect(row).toHaveAttribute("data-revoked", "true");
  expect((await api(request, key, "GET", "/webhooks")).status()).toBe(401);
});

test("webhooks: create an endpoint, test-send to a live receiver, see success inline", async ({ page }) => {
  const { receiver } = await webhooksPageOfNewProject(page, "Hooks");
  await page.getByTestId("endpoint-url-input").fill("ftp://nope");
  await page.getByTestId("create-endpoint-button").click();
  await expect(page.getByRole("alert")).toContainText(/http|URL/i);
  await page.getByTestId("endpoint-url-input").fill(receiver.url);
  await page.getByTestId("create-endpoint-button").click();
  await expect(page.getByTestId("new-endpoint-secret")).toContainText("whsec_");
  const card = page.getByTestId("endpoint-row");
  await expect(card).toHaveCount(1);
  await card.getByTestId("test-send-button").click();
  await expect(card.getByTestId("test-send-result")).toHaveAttribute("data-status", "succeeded", { timeout: 15_000 });
  expect(receiver.received.length).toBe(1);
  const body = JSON.parse(receiver.received[0].body);
  expect(body.event).toBe("test.ping");
  expect(body.data.message).toBe("Test webhook from Posthorn");
  await card.getByTestId("reveal-secret-button").click();
  await expect(card.getByTestId("endpoint-secret")).toContainText("whsec_");
  receiver.close();
});

test("every cabinet page renders for the demo owner, with no dead end", async ({ page }) => {
  await login(page, { email: "owner@example.com", password: "demo-password" });
  for (const [path, heading] of [
    ["/developers/webhooks", "Webhooks"], ["/developers/keys", "API keys"], ["/developers/events", "Event types"],
    ["/developers/team", "Team"], ["/developers/audit", "Audit"],
  ]) {
    await page.goto(path);
    await hydrated(page);
    await expect(page.getByRole("heading", { level: 1, name: heading })).toBeVisible();
    await expect(page.getByRole("banner").getByRole("link", { name: "Deliveries", exact: true })).toBeVisible();
  }
});

test("custom headers: set in the cabinet, sent to the receiver, never shown back, removable", async ({ page }) => {
  const { receiver } = await webhooksPageOfNewProject(page, "Headers");
  await page.getByTestId("endpoint-url-input").fill(receiver.url);
  await page.getByTestId("create-endpoint-button").click();
  const card = page.getByTestId("endpoint-row");
  await expect(card).toHaveCount(1);
  await card.getByTestId("edit-endpoint-button").click();
  // A reserved header is refused with a message.
  await card.getByTestId("header-name-input").fill("Content-Type");
  await card.getByTestId("header-value-input").fill("text/plain");
  await card.getByTestId("set-header-button").click();
  await expect(card.getByRole("status")).toBeVisible();
  await card.getByTestId("header-name-input").fill("X-Receiver-Token");
  await card.getByTestId("header-value-input").fill("tok-123-secret");
  await card.getByTestId("set-header-button").click();
  await expect(card.getByTestId("custom-headers")).toHaveText("Custom headers: X-Receiver-Token: [redacted]");
  await card.getByTestId("test-send-button").click();
  await expect(card.getByTestId("test-send-result")).toHaveAttribute("data-status", "succeeded", { timeout: 15_000 });
  expect(receiver.received[0].headers["x-receiver-token"]).toBe("tok-123-secret");
  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId("custom-headers")).toHaveText("Custom headers: X-Receiver-Token: [redacted]");
  expect(await page.content()).not.toContain("tok-123-secret");
  await card.getByTestId("edit-endpoint-button").click();
  await card.getByTestId("remove-header-button").click();
  await expect(card.getByTestId("custom-headers")).toHaveCount(0);
  await card.getByTestId("test-send-button").click();
  await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(2);
  expect(receiver.received[1].headers["x-receiver-token"]).toBeUndefined();
  receiver.close();
});
