import { test, expect, Page } from "@playwright/test";
import { hydrated, login, OWNER, PAGES } from "./helpers";


async function bin(page: Page) {
  const res = await page.request.post("/inspector/bins");
  expect(res.status()).toBe(201);
  return `/inspector/${(await res.json()).id}`;
}

test("20 loads of every page log no panic to the console", async ({ page }) => {
  test.setTimeout(300_000);
  const panics: string[] = [];
  page.on("console", (m) => { if (m.text().includes("panicked")) panics.push(`${page.url()}: ${m.text()}`); });
  page.on("pageerror", (e) => panics.push(`${page.url()}: ${e.message}`));
  await login(page, OWNER);
  const pages = [...PAGES, await bin(page)];
  for (const path of pages) {
    for (let i = 0; i < 20; i++) {
      await page.goto(path);
      await hydrated(page);
    }
  }
  await page.context().clearCookies();
  for (let i = 0; i < 20; i++) {
    await page.goto("/login");
    await hydrated(page);
  }
  expect(panics).toEqual([]);
});

test("no page scrolls sideways at 1440 px, and the inspector's bar spans the page like the cabinet's", async ({ page }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await login(page, OWNER);
  const binPath = await bin(page);
  await page.request.post(binPath.replace("/inspector/", "/r/"), { data: { hello: "wide" } });
  const wide: string[] = [];
  for (const path of [...PAGES, binPath]) {
    await page.goto(path);
    await hydrated(page);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > 1440) wide.push(`${path}: ${width}px`);
    const bar = await page.locator("header.topbar").first().evaluate((el) => el.getBoundingClientRect().width);
    if (bar < 1400) wide.push(`${path}: a ${Math.round(bar)}px header`);
  }
  expect(wide).toEqual([]);
});

test("no page scrolls sideways at 390 px, and the deliveries list starts in the first screen", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await login(page, OWNER);
  const pages = [...PAGES, await bin(page)];
  const wide: string[] = [];
  for (const path of pages) {
    await page.goto(path);
    await hydrated(page);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > 390) wide.push(`${path}: ${width}px`);
    await page.screenshot({ path: `../docs/screenshots/phone${path.replace(/\//g, "-").replace(/-inspector-.+/, "-inspector-bin")}.png` });
  }
  await page.context().clearCookies();
  await page.goto("/login");
  if (await page.evaluate(() => document.documentElement.scrollWidth) > 390) wide.push("/login");
  expect(wide).toEqual([]);
  await login(page, OWNER);
  // Every list page puts its first row, whole, in the first screen (844 px): the header
  // folds behind Menu and the deliveries filters behind "More filters".
  const binPath = await bin(page);
  // An audited action, so that the audit log has a row whatever ran before.
  await page.evaluate(() => fetch("/api/create_key", {
    method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "name=phone-check",
  }));
  await page.request.post(binPath.replace("/inspector/", "/r/"), { data: { hello: "phone" } });
  const lists: [string, string][] = [
    ["/developers/deliveries", "delivery-row"],
    ["/developers/webhooks", "endpoint-row"],
    ["/developers/keys", "key-row"],
    ["/developers/events", "event-type-row"],
    ["/developers/team", "member-row"],
    ["/developers/audit", "audit-row"],
    [binPath, "bin-request"],
  ];
  const below: string[] = [];
  for (const [path, testid] of lists) {
    await page.goto(path);
    await hydrated(page);
    const bottom = await page.getByTestId(testid).first().evaluate((el) => el.getBoundingClientRect().bottom);
    if (bottom > 844) below.push(`${path}: first ${testid} ends at ${Math.round(bottom)}px`);
  }
  expect(below).toEqual([]);
  // The folded parts open: the menu has the pages, "More filters" the other filters.
  await page.goto("/developers/deliveries");
  await hydrated(page);
  await expect(page.getByRole("link", { name: "Webhooks" })).toBeHidden();
  await page.getByTestId("menu-toggle").click();
  await expect(page.getByTestId("menu-toggle")).toHaveAttribute("aria-expanded", "true");
  await expect(page.getByRole("link", { name: "Webhooks" })).toBeVisible();
  await expect(page.getByTestId("endpoint-filter")).toBeHidden();
  await page.getByTestId("more-filters").click();
  await expect(page.getByTestId("endpoint-filter")).toBeVisible();
  // A row's second line says where it went and why it failed.
  await page.goto("/developers/deliveries?status=failed");
  await hydrated(page);
  await expect(page.getByTestId("delivery-row").first().getByTestId("row-error")).toBeVisible();
  await page.screenshot({ path: "../docs/screenshots/phone-deliveries-failed.png" });
});
