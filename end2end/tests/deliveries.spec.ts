import { test, expect, Page } from "@playwright/test";
import { api, createProject, hydrated, login, OWNER, startReceiver } from "./helpers";

async function openDeliveries(page: Page, query = "") {
  await page.goto(`/developers/deliveries${query}`);
  await hydrated(page);
  await expect(page.getByTestId("delivery-row").first()).toBeVisible();
}

test.describe("Webhook Delivery on the demo project", () => {
  test.beforeEach(async ({ page }) => login(page, OWNER));

  test("every status filter shows only rows of that status", async ({ page }) => {
    await openDeliveries(page);
    for (const status of ["pending", "in_flight", "succeeded", "failed", "dead_letter"]) {
      await page.getByTestId("status-filter").selectOption(status);
      await expect(page).toHaveURL(new RegExp(`status=${status}`));
      const rows = page.getByTestId("delivery-row");
      await expect(rows.first()).toHaveAttribute("data-status", status);
      const statuses = await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-status")));
      expect(statuses.length).toBeGreaterThan(0);
      expect(new Set(statuses)).toEqual(new Set([status]));
    }
  });

  test("the response-code and error-kind filters narrow the list", async ({ page }) => {
    await openDeliveries(page);
    await page.getByTestId("code-filter").selectOption("5xx");
    await expect(page).toHaveURL(/code=5xx/);
    await expect(page.getByTestId("delivery-row").first()).toHaveAttribute("data-code", /^5\d\d$/);
    const codes = await page.getByTestId("delivery-row").evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-code"))));
    expect(codes.every((c) => c >= 500 && c < 600)).toBe(true);

    await page.goto("/developers/deliveries?error_kind=timeout");
    await hydrated(page);
    const kinds = await page.getByTestId("delivery-row").evaluateAll((els) => els.map((e) => e.getAttribute("data-error-kind")));
    expect(kinds.length).toBeGreaterThan(0);
    expect(new Set(kinds)).toEqual(new Set(["timeout"]));
  });

  test("search finds a request id and an event id", async ({ page }) => {
    await openDeliveries(page);
    const row = page.getByTestId("delivery-row").nth(3);
    const requestId = (await row.getAttribute("data-request-id"))!;
    const eventId = (await row.getAttribute("data-event-id"))!;
    await page.getByTestId("search-input").fill(requestId);
    await page.getByTestId("search-input").press("Enter");
    await expect(page.getByTestId("delivery-row")).toHaveCount(1);
    await expect(page.getByTestId("delivery-row")).toHaveAttribute("data-request-id", requestId);

    await page.getByTestId("search-input").fill(eventId);
    await page.getByTestId("search-input").press("Enter");
    await expect(page).toHaveURL(new RegExp(`q=${eventId}`));
    const events = await page.getByTestId("delivery-row").evaluateAll((els) => els.map((e) => e.getAttribute("data-event-id")));
    expect(events.length).toBeGreaterThan(0);
    expect(new Set(events)).toEqual(new Set([eventId]));
  });

  test("search takes ids in any case and by a prefix of 8 characters or more, and says when nothing matches", async ({ page }) => {
    await openDeliveries(page);
    const row = page.getByTestId("delivery-row").nth(2);
    const requestId = (await row.getAttribute("data-request-id"))!;
    const eventId = (await row.getAttribute("data-event-id"))!;
    await page.getByTestId("search-input").fill(requestId.toLowerCase());
    await page.getByTestId("search-input").press("Enter");
    await expect(page.getByTestId("delivery-row")).toHaveCount(1);
    await expect(page.getByTestId("delivery-row")).toHaveAttribute("data-request-id", requestId);

    // The first 16 characters of the event id, lower-case: its attempts (and any other
    // event's that start alike).
    await page.getByTestId("search-input").fill(eventId.slice(0, 16).toLowerCase());
    await page.getByTestId("search-input").press("Enter");
    await expect(page.locator(`[data-testid=delivery-row][data-event-id="${eventId}"]`).first()).toBeVisible();
    const events = await page.getByTestId("delivery-row").evaluateAll((els) => els.map((e) => e.getAttribute("data-event-id")!));
    expect(events.every((e) => e.startsWith(eventId.slice(0, 16)))).toBe(true);

    await page.getByTestId("search-input").fill("evt_01");
    await page.getByTestId("search-input").press("Enter");
    await expect(page.getByTestId("search-no-match")).toContainText("at least 8 characters");
    await page.getByTestId("search-input").fill("evt_ZZZZZZZZ");
    await page.getByTestId("search-input").press("Enter");
    await expect(page.getByTestId("search-no-match")).toContainText("No attempt in this view has an id starting with evt_ZZZZZZZZ");
    await expect(page.getByTestId("delivery-row")).toHaveCount(0);
  });

  test("a row expands to payload, response and request id", async ({ page }) => {
    await openDeliveries(page, "?status=dead_letter&code=404");
    const row = page.getByTestId("delivery-row").first();
    const requestId = (await row.getAttribute("data-request-id"))!;
    await row.click();
    const detail = page.getByTestId("delivery-detail");
    await expect(detail).toBeVisible();
    await expect(detail.getByTestId("detail-request-id")).toContainText(requestId);
    await expect(detail.getByTestId("detail-payload")).toContainText('"event_id"');
    await expect(detail.getByTestId("detail-response")).toContainText("Not Found");
  });

  test("hostile text in payloads and response bodies is shown as text", async ({ page }) => {
    let dialogs = 0;
    page.on("dialog", (d) => { dialogs++; d.dismiss(); });
    await openDeliveries(page, "?code=404");
    await page.getByTestId("delivery-row").first().click();
    await expect(page.getByTestId("detail-response")).toContainText("<script>alert('from receiver')</script>");
    expect(await page.locator(".detail script").count()).toBe(0);
    await page.goto("/developers/deliveries?event_type=contact.created");
    await hydrated(page);
    for (const row of await page.getByTestId("delivery-row").all()) {
      await row.locator(".drow").click();
      const payload = page.getByTestId("detail-payload");
      await expect(payload).toBeVisible();
      if ((await payload.textContent())!.includes("<script>")) {
        await expect(payload).toContainText("<img src=x onerror=alert(1)>");
        expect(await page.locator(".detail img").count()).toBe(0);
        break;
      }
    }
    expect(dialogs).toBe(0);
  });

  test("Retry is off while an attempt of the same event is pending, says why, and the server refuses it too", async ({ page }) => {
    await openDeliveries(page, "?status=pending");
    const row = page.getByTestId("delivery-row").first();
    await row.locator(".drow").click();
    const retry = page.getByTestId("retry-button");
    await expect(retry).toBeDisabled();
    await expect(retry).toHaveAttribute("title", /already pending or in flight/);
    // Redirect, to a bin, still goes.
    await expect(page.getByTestId("redirect-button")).toBeEnabled();
    const [projectId, id] = [await row.getAttribute("data-project"), await row.getAttribute("data-id")];
    const status = await page.evaluate(async ([project_id, id]) => {
      const r = await fetch("/api/retry_delivery", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ project_id: project_id!, id: id! }).toString(),
      });
      return { status: r.status, text: await r.text() };
    }, [projectId, id] as const);
    expect(status.status).toBe(409);
    expect(status.text).toContain("already pending or in flight");
  });

  test("pagination walks three pages with no row twice and none missing", async ({ page }) => {
    await openDeliveries(page);
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const ids = await page.getByTestId("delivery-row").evaluateAll((els) => els.map((e) => e.getAttribute("data-id")!));
      expect(ids.length).toBe(50);
      seen.push(...ids);
      await page.getByTestId("next-page").click();
      await expect(page).toHaveURL(/cursor=/);
      await expect(page.getByTestId("delivery-row").first()).not.toHaveAttribute("data-id", ids[0]);
    }
    expect(new Set(seen).size).toBe(150);
    // None missing: the three pages are exactly the newest 150 ids in order.
    const sorted = [...seen].map(Number);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]).not.toBe(sorted[i - 1]);
  });

  test("keyboard: / focuses search, j/k move, Enter expands", async ({ page }) => {
    await openDeliveries(page);
    await page.keyboard.press("/");
    await expect(page.getByTestId("search-input")).toBeFocused();
    await page.getByTestId("search-input").blur();
    await page.keyboard.press("j");
    await page.keyboard.press("j");
    await page.keyboard.press("k");
    await page.keyboard.press("Enter");
    await expect(page.getByTestId("delivery-detail")).toBeVisible();
    await expect(page.getByTestId("delivery-row").nth(0)).toHaveClass(/open/);
  });
});

test("Retry sends a new attempt with a new request id that succeeds live; Redirect lands in a bin", async ({ page, request }) => {
  const receiver = await startReceiver();
  const p = createProject("Retry shop");
  const hook = await api(request, p.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] });
  expect(hook.status()).toBe(201);
  const ev = await api(request, p.apiKey, "POST", "/events", { event: "payment.succeeded", data: { amount: 42 } });
  expect(ev.status()).toBe(202);
  await expect.poll(() => receiver.received.length).toBe(1);

  await login(page, { email: p.email, password: p.password });
  await openDeliveries(page);
  const first = page.getByTestId("delivery-row").first();
  await expect(first).toHaveAttribute("data-status", "succeeded");
  const oldRequestId = await first.getAttribute("data-request-id");
  await first.click();
  await page.getByTestId("retry-button").click();
  await expect(page.getByTestId("action-message")).toContainText("Retry queued");
  const top = page.getByTestId("delivery-row").first();
  await expect(top).not.toHaveAttribute("data-request-id", oldRequestId!);
  await expect(top).toHaveAttribute("data-status", "succeeded", { timeout: 15_000 });
  await expect.poll(() => receiver.received.length).toBe(2);
  expect(receiver.received[1].headers["x-request-id"]).toBe(await top.getAttribute("data-request-id"));
  expect(receiver.received[1].headers["x-delivery-attempt"]).toBe("2");

  // Redirect (from the row still open): the same event, signed, into a new inspector bin.
  await expect(page.getByTestId("delivery-row").nth(1)).toHaveClass(/open/);
  await page.getByTestId("redirect-button").click();
  const link = page.getByTestId("bin-link");
  await expect(link).toBeVisible();
  const href = (await link.getAttribute("href"))!;
  await page.goto(href);
  await hydrated(page);
  await expect(page.getByTestId("bin-request").first()).toBeVisible({ timeout: 15_000 });
  await page.getByTestId("bin-request").first().locator(".reqline").click();
  await expect(page.getByTestId("bin-request-body")).toContainText('"amount": 42');
  expect(receiver.received.length).toBe(2);

  // After a reload the Redirect is shown as what it is: the bin as its target, its own
  // badge, and the link to the bin in the row and in its detail.
  await page.goto("/developers/deliveries");
  await hydrated(page);
  const redirected = page.locator("[data-testid=delivery-row]").filter({ has: page.getByTestId("redirect-badge") }).first();
  await expect(redirected.getByTestId("redirect-badge")).toHaveText("Redirected");
  await expect(redirected.getByTestId("row-bin-link")).toHaveAttribute("href", href);
  await redirected.locator(".drow").click({ position: { x: 12, y: 8 } });
  await expect(page.getByTestId("bin-link")).toHaveAttribute("href", href);
  receiver.close();
});
