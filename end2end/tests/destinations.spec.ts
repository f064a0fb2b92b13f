import { test, expect } from "@playwright/test";
import { execFileSync, spawn } from "node:child_process";
import * as net from "node:net";
import { api, createProject, hydrated, login } from "./helpers";

// A private Redis for this spec (the machine's own need not run), read with redis-cli.
async function startRedis() {
  const port = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  const cli = (...args: string[]) => execFileSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" });
  await expect.poll(() => { try { return cli("PING").trim(); } catch { return ""; } }).toBe("PONG");
  // The stream's entries, each as its fields.
  const entries = () => {
    const out = cli("--no-raw", "XRANGE", "orders", "-", "+");
    return out.split(/\n(?=\d+\) 1\))/).filter((e) => e.trim()).map((e) => {
      const values = [...e.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]).slice(1);
      const fields: Record<string, string> = {};
      for (let i = 0; i + 1 < values.length; i += 2) fields[values[i].toLowerCase()] = values[i + 1];
      return fields;
    });
  };
  return { port, cli, entries, stop: () => child.kill() };
}

test("a Redis destination: its card, its expanded attempt, and a Retry from the dashboard publishing again", async ({ page, request }) => {
  const redis = await startRedis();
  const p = createProject("Streams");
  const created = await api(request, p.apiKey, "POST", "/webhooks", {
    events: ["*"],
    destination: { type: "redis", url: `redis://127.0.0.1:${redis.port}/0`, stream: "orders" },
  });
  expect(created.status()).toBe(201);
  expect((await api(request, p.apiKey, "POST", "/events", { event: "order.paid", data: { amount: 42, note: "<img src=x onerror=alert(1)>" } })).status()).toBe(202);
  await expect.poll(() => redis.entries().length, { timeout: 15_000 }).toBe(1);

  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/webhooks");
  await hydrated(page);
  const badge = page.getByTestId("destination-badge");
  await expect(badge).toHaveText("Redis stream · orders");
  await expect(badge).toHaveAttribute("title", `Publishes each attempt to redis://127.0.0.1:${redis.port}/0, without credentials`);
  await page.screenshot({ path: "test-results/destination-card.png", fullPage: true });

  await page.goto("/developers/deliveries");
  await hydrated(page);
  await page.getByTestId("delivery-row").first().locator(".drow").click();
  const detail = page.getByTestId("delivery-detail");
  await expect(detail).toContainText(`redis://127.0.0.1:${redis.port}/0 stream=orders`);
  await expect(detail).toContainText("XADD orders: entry");
  await expect(detail).toContainText("Published to");
  await expect(detail).toContainText("Redis's answer");
  // A publish has no curl to copy.
  await expect(detail.getByRole("button", { name: /Copy as curl/ })).toHaveCount(0);
  // Hostile text in the payload is shown as text.
  await expect(detail).toContainText("<img src=x onerror=alert(1)>");
  await page.screenshot({ path: "test-results/destination-attempt.png", fullPage: true });

  await detail.getByTestId("retry-button").click();
  await expect.poll(() => redis.entries().length, { timeout: 15_000 }).toBe(2);
  const [first, second] = redis.entries();
  expect(second["webhook-id"]).toBe(first["webhook-id"]);
  expect(second["x-request-id"]).not.toBe(first["x-request-id"]);
  await expect(detail.getByTestId("attempt-link")).toHaveCount(2, { timeout: 5_000 });
  await expect(detail.getByTestId("attempt-link").nth(1)).toHaveText(second["x-request-id"]);

  // Redirect: the same event, signed, into an inspector bin over HTTP; the stream gets
  // nothing more.
  await page.getByTestId("redirect-button").click();
  const link = page.getByTestId("bin-link");
  await expect(link).toBeVisible();
  await page.goto((await link.getAttribute("href"))!);
  await hydrated(page);
  await expect(page.getByTestId("bin-request").first()).toBeVisible({ timeout: 15_000 });
  await page.getByTestId("bin-request").first().locator(".reqline").click();
  await expect(page.getByTestId("bin-request-body")).toContainText('"amount": 42');
  expect(redis.entries().length).toBe(2);
  redis.stop();
});
