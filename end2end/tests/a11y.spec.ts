import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { hydrated, login, OWNER, PAGES, SUPPORT } from "./helpers";

// Every page through axe-core (WCAG 2 A and AA rules), as an owner and as support, with a
// delivery's detail open: no serious or critical violation. What this adds to the other
// suites: the accessibility tree and contrast, which no other test reads.

async function scan(page: Page, label: string) {
  const result = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  for (const v of result.violations) {
    console.log(`${label}: ${v.impact} ${v.id} (${v.nodes.length}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ")}`);
  }
  return bad.map((v) => `${label}: ${v.id} — ${v.help} (${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ")})`);
}

test("every page has no serious or critical accessibility violation", async ({ page }) => {
  test.setTimeout(180_000);
  const found: string[] = [];
  await page.goto("/login");
  await hydrated(page);
  found.push(...(await scan(page, "/login")));
  await login(page, OWNER);
  const res = await page.request.post("/inspector/bins");
  const bin = `/inspector/${(await res.json()).id}`;
  for (const path of [...PAGES, bin]) {
    await page.goto(path);
    await hydrated(page);
    found.push(...(await scan(page, path)));
  }
  // A delivery opened, with its detail and actions.
  await page.goto("/developers/deliveries");
  await hydrated(page);
  await page.getByTestId("delivery-row").first().click();
  await expect(page.getByTestId("delivery-detail")).toBeVisible();
  found.push(...(await scan(page, "/developers/deliveries (detail open)")));
  // Support's view of the same pages.
  await page.context().clearCookies();
  await login(page, SUPPORT);
  for (const path of ["/developers", "/developers/deliveries", "/developers/webhooks"]) {
    await page.goto(path);
    await hydrated(page);
    found.push(...(await scan(page, `${path} (support)`)));
  }
  expect(found).toEqual([]);
});
