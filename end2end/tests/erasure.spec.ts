import { test, expect } from "@playwright/test";
import { api, createProject, hydrated, login, startReceiver } from "./helpers";

test("an erased event's attempt shows when and by which erasure its payload went, and nothing of it", async ({ page, request }) => {
  const receiver = await startReceiver();
  const p = createProject("Erasing");
  expect((await api(request, p.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] })).status()).toBe(201);
  const secret = `person-${Date.now()}@example.com`;
  const sent = await api(request, p.apiKey, "POST", "/events", {
    event: "customer.updated", data: { email: secret, name: "<b>Ada</b>" }, subjects: ["customer:7"],
  });
  expect(sent.status()).toBe(202);
  const { id: eventId } = await sent.json();
  await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(1);

  await login(page, { email: p.email, password: p.password });
  await page.goto(`/developers/deliveries?q=${eventId}`);
  await hydrated(page);
  const row = page.locator(`[data-testid=delivery-row][data-event-id="${eventId}"]`);
  await row.locator(".drow").click();
  await expect(page.getByTestId("detail-payload")).toContainText(secret);

  const started = await api(request, p.apiKey, "POST", "/erasures", { subject: "customer:7" });
  expect(started.status()).toBe(202);
  const { id: erasureId } = await started.json();
  await expect.poll(async () => (await (await api(request, p.apiKey, "GET", `/erasures/${erasureId}`)).json()).status,
    { timeout: 20_000 }).toBe("done");

  await page.reload();
  await hydrated(page);
  await page.locator(`[data-testid=delivery-row][data-event-id="${eventId}"] .drow`).click();
  const marker = page.getByTestId("detail-erased");
  await expect(marker).toContainText("Erased on");
  await expect(marker).toContainText(`(erasure #${erasureId})`);
  await expect(page.getByTestId("detail-payload")).toHaveCount(0);
  await expect(page.getByTestId("retry-button")).toBeDisabled();
  await expect(page.getByTestId("redirect-button")).toBeDisabled();
  await expect(page.getByTestId("detail-response")).toHaveText("(no body)");
  expect(await page.content()).not.toContain(secret);
  await page.getByTestId("delivery-detail").screenshot({ path: "../docs/screenshots/delivery-erased.png" });
  receiver.close();
});
