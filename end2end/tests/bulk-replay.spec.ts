import { test, expect, APIRequestContext } from "@playwright/test";
import { api, createProject, hydrated, login, startReceiver } from "./helpers";

async function deadLettered(request: APIRequestContext, n: number) {
  const receiver = await startReceiver();
  receiver.control.status = 404; // dead letter at once
  const p = createProject("Replay shop");
  expect((await api(request, p.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] })).status()).toBe(201);
  for (let i = 0; i < n; i++) {
    expect((await api(request, p.apiKey, "POST", "/events", { event: "order.created", data: { i } })).status()).toBe(202);
  }
  await expect.poll(async () => {
    const res = await api(request, p.apiKey, "GET", "/deliveries?status=dead_letter&limit=200");
    return (await res.json()).data.length;
  }, { timeout: 30_000 }).toBe(n);
  receiver.control.status = 200;
  receiver.received.length = 0;
  return { p, receiver };
}

test("Retry all matching: 200 dead letters, count first, progress live, each event once", async ({ page, request }) => {
  test.setTimeout(120_000);
  const { p, receiver } = await deadLettered(request, 200);
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/deliveries?status=dead_letter");
  await hydrated(page);
  await page.getByTestId("bulk-retry-button").click();
  await expect(page.getByTestId("bulk-count")).toHaveAttribute("data-count", "200");
  await page.getByTestId("bulk-confirm-button").click();
  const progress = page.getByTestId("bulk-progress");
  await expect(progress).toHaveAttribute("data-total", "200");
  await expect(progress).toHaveAttribute("data-status", "running");
  await expect(progress).toHaveAttribute("data-finished", "200", { timeout: 60_000 });
  await expect(progress).toHaveAttribute("data-status", "done");
  await expect.poll(() => receiver.received.length).toBe(200);
  const ids = new Set(receiver.received.map((r) => r.headers["x-event-id"]));
  expect(ids.size).toBe(200);
  receiver.close();
});

test("a bulk replay can be cancelled half way", async ({ page, request }) => {
  test.setTimeout(120_000);
  const { p, receiver } = await deadLettered(request, 200);
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/deliveries?status=dead_letter");
  await hydrated(page);
  await page.getByTestId("bulk-retry-button").click();
  await page.getByTestId("bulk-confirm-button").click();
  const progress = page.getByTestId("bulk-progress");
  await expect(progress).toHaveAttribute("data-status", "running");
  await page.getByTestId("bulk-cancel-button").click();
  await expect(progress).toHaveAttribute("data-status", "cancelled");
  const queued = Number(await progress.getAttribute("data-queued"));
  expect(queued).toBeLessThan(200);
  await page.waitForTimeout(3000);
  expect(receiver.received.length).toBe(queued);
  receiver.close();
});
