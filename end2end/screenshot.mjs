// Screenshots of the main pages for review (docs/screenshots): node screenshot.mjs <base> <outdir>
import { chromium } from "@playwright/test";
const [base = "http://127.0.0.1:3000", out = "shots"] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"] });
for (const width of [1440, 390]) {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  page.on("console", (m) => { if (m.type() === "error") console.log("console:", m.text()); });
  page.on("pageerror", (e) => console.log("pageerror:", e.message));
  await page.goto(`${base}/login`);
  await page.waitForSelector("body[data-hydrated=true]", { timeout: 20000 });
  await page.screenshot({ path: `${out}/login-${width}.png` });
  await page.fill("[data-testid=login-email]", "owner@example.com");
  await page.fill("[data-testid=login-password]", "demo-password");
  await page.click("[data-testid=login-submit]");
  await page.waitForURL("**/developers");
  await page.screenshot({ path: `${out}/cabinet-${width}.png` });
  await page.goto(`${base}/developers/webhooks`);
  await page.waitForSelector("body[data-hydrated=true]");
  await page.screenshot({ path: `${out}/webhooks-${width}.png`, fullPage: true });
  await page.goto(`${base}/developers/deliveries`);
  await page.waitForSelector("body[data-hydrated=true]");
  await page.screenshot({ path: `${out}/deliveries-${width}.png` });
  await page.click("[data-testid=delivery-row] >> nth=2");
  await page.waitForSelector("[data-testid=detail-payload]");
  await page.screenshot({ path: `${out}/deliveries-expanded-${width}.png`, fullPage: width > 1000 ? false : true });
  // A failed attempt: the error in words, the raw text under Details (opened).
  await page.goto(`${base}/developers/deliveries?status=failed`);
  await page.waitForSelector("body[data-hydrated=true]");
  await page.click("[data-testid=delivery-row] >> nth=0 >> .drow");
  await page.click("[data-testid=error-details] summary");
  await page.screenshot({ path: `${out}/deliveries-error-${width}.png` });
  // The team (roles as controls), the catalogue with its schema editor open, the keys.
  await page.goto(`${base}/developers/team`);
  await page.waitForSelector("body[data-hydrated=true]");
  await page.screenshot({ path: `${out}/team-${width}.png` });
  await page.goto(`${base}/developers/events`);
  await page.waitForSelector("body[data-hydrated=true]");
  await page.click("[data-testid=event-type-row] >> nth=0 >> [data-testid=edit-schema]");
  await page.waitForSelector("[data-testid=schema-status].ok, [data-testid=schema-status].warn", { timeout: 10000 });
  await page.locator("[data-testid=schema-panel]").scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${out}/events-schema-editor-${width}.png`, fullPage: width < 1000 });
  await page.goto(`${base}/developers/keys`);
  await page.waitForSelector("body[data-hydrated=true]");
  await page.screenshot({ path: `${out}/keys-${width}.png` });
  if (width < 1000) {
    // The phone's folded menu, opened.
    await page.click("[data-testid=menu-toggle]");
    await page.screenshot({ path: `${out}/menu-open-${width}.png` });
  }
  await page.close();
}
await browser.close();
