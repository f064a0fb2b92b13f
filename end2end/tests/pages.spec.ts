import { test, expect, Page } from "@playwright/test";
import { hydrated, login, OWNER } from "./helpers";

const PAGES = [
  "/developers",
  "/developers/deliveries",
  "/developers/webhooks",
  "/developers/keys",
  "/developers/events",
  "/developers/team",
  "/developers/audit",
  "/inspector",
];

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
  await page.goto("/developers/deliveries");
  await hydrated(page);
  const top = await page.getByTestId("delivery-row").first().evaluate((el) => el.getBoundingClientRect().top);
  expect(top).toBeLessThan(844);
});
