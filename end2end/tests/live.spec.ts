import { test, expect } from "@playwright/test";
import { api, createProject, hydrated, login, startReceiver, SUPPORT } from "./helpers";

// The browser runs in Tokyo (UTC+9, no summer time): local times differ from UTC.
test.use({ timezoneId: "Asia/Tokyo" });

test("new attempts announce themselves without a reload; an open row follows its Retry", async ({ page, request }) => {
  const receiver = await startReceiver();
  const p = createProject("Live");
  expect((await api(request, p.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] })).status()).toBe(201);
  expect((await api(request, p.apiKey, "POST", "/events", { event: "order.paid", data: { n: 1 } })).status()).toBe(202);
  await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(1);
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/deliveries");
  await hydrated(page);
  await expect(page.getByTestId("delivery-row")).toHaveCount(1);
  await expect(page.getByTestId("new-rows-bar")).toHaveCount(0);

  // An event sent now, with the page at its top and nothing open: within 5 s it is
  // simply there, no click needed.
  expect((await api(request, p.apiKey, "POST", "/events", { event: "order.shipped", data: { n: 2 } })).status()).toBe(202);
  const sent = Date.now();
  await expect(page.getByTestId("delivery-row")).toHaveCount(2, { timeout: 6_000 });
  expect(Date.now() - sent).toBeLessThan(5_000);
  await expect(page.getByTestId("delivery-row").first()).toContainText("order.shipped");
  await expect(page.getByTestId("new-rows-bar")).toHaveCount(0);

  // With a row open nothing moves under the reader: the bar offers the new one, and one
  // click shows it.
  await page.getByTestId("delivery-row").nth(1).locator(".drow").click();
  await expect(page.getByTestId("delivery-detail")).toBeVisible();
  expect((await api(request, p.apiKey, "POST", "/events", { event: "order.packed", data: { n: 3 } })).status()).toBe(202);
  await expect(page.getByTestId("new-rows-bar")).toBeVisible({ timeout: 6_000 });
  await expect(page.getByTestId("new-rows-bar")).toContainText("1 new");
  await expect(page.getByTestId("delivery-row")).toHaveCount(2);
  await page.getByTestId("new-rows-bar").click();
  await expect(page.getByTestId("delivery-row")).toHaveCount(3);
  await expect(page.getByTestId("delivery-row").first()).toContainText("order.packed");
  await expect(page.getByTestId("new-rows-bar")).toHaveCount(0);
  await page.keyboard.press("Escape");

  // Absolute time beside the relative one, in the browser's zone; UTC on hover.
  const time = page.getByTestId("delivery-row").first().locator("time");
  const iso = (await time.getAttribute("datetime"))!;
  const local = new Date(new Date(iso).getTime() + 9 * 3600_000);
  const hhmmss = local.toISOString().slice(11, 19);
  await expect(time.locator(".abs")).toContainText(hhmmss);
  await expect(time).toHaveAttribute("title", /UTC$/);
  expect(await time.getAttribute("title")).toContain(iso.slice(11, 19));

  // The open row's attempts gain the Retry, each a link to its own row.
  await page.getByTestId("delivery-row").first().locator(".drow").click();
  const detail = page.getByTestId("delivery-detail");
  await expect(detail.getByTestId("attempt-link")).toHaveCount(1);
  await detail.getByTestId("retry-button").click();
  await expect(detail.getByTestId("attempt-link")).toHaveCount(2, { timeout: 5_000 });
  const retried = (await detail.getByTestId("attempt-link").nth(1).textContent())!.trim();
  expect(retried).toMatch(/^req_/);
  await expect(detail.getByTestId("attempt-link").nth(1)).toHaveAttribute("href", `/developers/deliveries?q=${retried}`);
  // The Retry is the list's newest row, timed when it went out.
  const newest = page.getByTestId("delivery-row").first();
  await expect(newest).toHaveAttribute("data-request-id", retried);
  await expect(newest.locator("time")).toContainText(/just now|^\d+s ago/);
  receiver.close();
});

test("the range menu offers a custom from–to in local time and shows what the URL says", async ({ page, request }) => {
  const p = createProject("Range");
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/deliveries");
  await hydrated(page);
  await expect(page.getByTestId("custom-range")).toBeHidden();
  await page.getByTestId("range-filter").selectOption("custom");
  await expect(page.getByTestId("custom-range")).toBeVisible();
  await page.getByTestId("range-from").fill("2026-12-01T09:00");
  await page.getByTestId("range-to").fill("2026-12-02T18:30");
  await page.getByTestId("range-apply").click();
  // Tokyo's 09:00 is UTC's 00:00.
  await page.waitForURL(/since=2026-12-01T00%3A00%3A00Z&until=2026-12-02T09%3A30%3A00Z/);

  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId("range-filter")).toHaveValue("custom");
  await expect(page.getByTestId("custom-range")).toBeVisible();
  await expect(page.getByTestId("range-from")).toHaveValue("2026-12-01T09:00");
  await expect(page.getByTestId("range-to")).toHaveValue("2026-12-02T18:30");

  // A preset written in the URL is named as such.
  const since = new Date(Date.now() - 6 * 3600_000).toISOString().slice(0, 19) + "Z";
  await page.goto(`/developers/deliveries?since=${since}`);
  await hydrated(page);
  await expect(page.getByTestId("range-filter")).toHaveValue("6");

  // Clear goes back to the whole window inside the page (the list asks with no filter).
  await page.getByRole("link", { name: "Clear", exact: true }).click();
  await page.waitForURL(/\/developers\/deliveries$/);
  await expect(page.getByText("No deliveries match this view.")).toBeVisible();
  await expect(page.getByTestId("range-filter")).toHaveValue("");
});

test("a failed attempt is explained in words, the raw error under details", async ({ page, request }) => {
  const receiver = await startReceiver();
  receiver.control.status = 503;
  const p = createProject("Errors");
  expect((await api(request, p.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] })).status()).toBe(201);
  expect((await api(request, p.apiKey, "POST", "/events", { event: "order.paid", data: { n: 1 } })).status()).toBe(202);
  await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBeGreaterThan(0);
  // The next attempt succeeds.
  receiver.control.status = 200;
  await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(2);
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/deliveries?status=failed");
  await hydrated(page);
  const row = page.getByTestId("delivery-row").first();
  // The list's line says what happened; the detail, which knows the attempts, what followed.
  await expect(row.getByTestId("row-error")).toHaveText("The endpoint answered 503 Service Unavailable.");
  await row.locator(".drow").click();
  const detail = page.getByTestId("delivery-detail");
  await expect(detail.getByTestId("error-explained")).toHaveText("The endpoint answered 503 Service Unavailable. Attempt 2 succeeded.");
  const raw = detail.getByTestId("error-details");
  await expect(raw.locator("code")).toBeHidden();
  await raw.locator("summary").click();
  await expect(raw.locator("code")).toHaveText("http_status: endpoint answered 503");
  receiver.close();
});

test("support picks the project in the list; the choice is in the URL", async ({ page, request }) => {
  const a = createProject("Support view A");
  const b = createProject("Support view B");
  const receiver = await startReceiver();
  for (const p of [a, b]) {
    expect((await api(request, p.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] })).status()).toBe(201);
    expect((await api(request, p.apiKey, "POST", "/events", { event: "order.paid", data: {} })).status()).toBe(202);
  }
  await login(page, SUPPORT);
  await page.goto(`/developers/deliveries?project=${b.projectId}`);
  await hydrated(page);
  await expect(page.getByTestId("project-filter")).toHaveValue(String(b.projectId));
  await expect(page.getByTestId("delivery-row")).toHaveCount(1);
  await expect(page.getByTestId("delivery-row").first()).toHaveAttribute("data-project", String(b.projectId));
  await expect(page.getByTestId("row-project").first()).toHaveText("Support view B");
  await page.getByTestId("project-filter").selectOption(String(a.projectId));
  await page.waitForURL(`**/developers/deliveries?project=${a.projectId}`);
  await expect(page.getByTestId("delivery-row").first()).toHaveAttribute("data-project", String(a.projectId));
  // An owner of one project cannot use the parameter to read another.
  const owner = await page.context().browser()!.newContext();
  const op = await owner.newPage();
  await login(op, { email: a.email, password: a.password });
  await op.goto(`/developers/deliveries?project=${b.projectId}`);
  await hydrated(op);
  await expect(op.getByTestId("delivery-row")).toHaveCount(0);
  await expect(op.getByTestId("project-filter")).toHaveCount(0);
  await owner.close();
  receiver.close();
});

test("inspector requests open and close from the keyboard", async ({ page, request }) => {
  await page.goto("/inspector");
  await hydrated(page);
  await page.getByTestId("create-bin-button").click();
  await page.waitForURL(/\/inspector\/[0-9a-f]{32}$/);
  await hydrated(page);
  const url = (await page.getByTestId("bin-url").textContent())!.trim();
  expect((await request.post(url, { data: { amount: 1 } })).status()).toBe(200);
  const line = page.getByTestId("bin-request").first().locator(".reqline");
  await expect(line).toBeVisible({ timeout: 10_000 });
  await line.focus();
  await expect(line).toHaveAttribute("aria-expanded", "false");
  await page.keyboard.press("Enter");
  await expect(line).toHaveAttribute("aria-expanded", "true");
  await expect(page.getByTestId("bin-request-detail")).toBeVisible();
  await page.keyboard.press(" ");
  await expect(page.getByTestId("bin-request-detail")).toHaveCount(0);
});
