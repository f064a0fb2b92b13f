import { test, expect } from "@playwright/test";
import { api, createProject, hydrated, startReceiver } from "./helpers";

test("keyboard only: from a shared link through sign-in to an expanded row and a Retry", async ({ page, request }) => {
  const receiver = await startReceiver();
  const p = createProject("Keyboard");
  expect((await api(request, p.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] })).status()).toBe(201);
  expect((await api(request, p.apiKey, "POST", "/events", { event: "order.paid", data: { n: 1 } })).status()).toBe(202);
  await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(1);

  await page.goto("/developers/deliveries");
  await expect(page).toHaveURL(/\/login\?next=%2Fdevelopers%2Fdeliveries$/);
  await hydrated(page);
  await page.keyboard.press("Tab");
  await expect(page.getByTestId("login-email")).toBeFocused();
  await page.keyboard.type(p.email);
  await page.keyboard.press("Tab");
  await expect(page.getByTestId("login-password")).toBeFocused();
  await page.keyboard.type(p.password);
  await page.keyboard.press("Enter");
  await page.waitForURL("**/developers/deliveries");
  await hydrated(page);
  // Arrived by the router: the focus is on the page's content.
  await expect(page.locator("main#content")).toBeFocused();

  // Loaded afresh, the first Tab offers to skip the navigation.
  await page.reload();
  await hydrated(page);
  await page.keyboard.press("Tab");
  await expect(page.getByTestId("skip-link")).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.locator("main#content")).toBeFocused();

  // j moves the focus to the first row; Enter opens it and says so.
  await page.keyboard.press("j");
  const id = await page.getByTestId("delivery-row").first().getAttribute("data-id");
  const row = page.locator(`[data-testid=delivery-row][data-id="${id}"] > .drow`);
  await expect(row).toBeFocused();
  await expect(row).toHaveAttribute("aria-expanded", "false");
  await page.keyboard.press("Enter");
  await expect(row).toHaveAttribute("aria-expanded", "true");
  await expect(page.getByTestId("delivery-detail")).toBeVisible();

  // Tab reaches Retry inside the detail; Enter on it retries and leaves the row open.
  await page.keyboard.press("Tab");
  await expect(page.getByTestId("retry-button")).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("action-message")).toContainText("Retry queued");
  await expect(page.getByTestId("delivery-detail")).toBeVisible();
  await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(2);

  // The focus stays in the detail after the Retry: the keyboard goes on from there.
  const focusedInDetail = () => page.evaluate(() => !!document.activeElement?.closest("[data-testid=delivery-detail]"));
  await expect.poll(focusedInDetail).toBe(true);

  // Space on a focused row closes it.
  await row.focus();
  await page.keyboard.press(" ");
  await expect(row).toHaveAttribute("aria-expanded", "false");
  await expect(page.getByTestId("delivery-detail")).toHaveCount(0);

  // Escape, from a button inside the open detail, closes the row and focuses it.
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("delivery-detail")).toBeVisible();
  await page.keyboard.press("Tab");
  await expect(page.getByTestId("retry-button")).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(page.getByTestId("delivery-detail")).toHaveCount(0);
  await expect(row).toBeFocused();
  await expect(row).toHaveAttribute("aria-expanded", "false");
  receiver.close();
});
