import { chromium } from "@playwright/test";
const [base, out] = ["http://127.0.0.1:3000", "/tmp/shots"];
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] });
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
page.on("pageerror", (e) => console.log("pageerror:", e.message));
await page.goto(`${base}/login`);
await page.waitForSelector("body[data-hydrated=true]");
await page.fill("[data-testid=login-email]", "owner@example.com");
await page.fill("[data-testid=login-password]", "demo-password");
await page.click("[data-testid=login-submit]");
await page.waitForURL("**/developers");
for (const p of ["webhooks", "keys", "events", "audit"]) {
  await page.goto(`${base}/developers/${p}`);
  await page.waitForSelector("body[data-hydrated=true]");
  await page.screenshot({ path: `${out}/${p}-1440.png` });
}
await page.goto(`${base}/inspector`);
await page.waitForSelector("body[data-hydrated=true]");
await page.click("[data-testid=create-bin-button]");
await page.waitForURL(/inspector\/[0-9a-f]+/);
await page.waitForSelector("body[data-hydrated=true]");
const url = (await page.textContent("[data-testid=bin-url]")).trim();
await fetch(url + "/x?y=1", { method: "POST", body: '{"hello":"<b>world</b>"}', headers: { "content-type": "application/json", "x-botix-timestamp": String(Math.floor(Date.now()/1000)), "x-botix-signature": "sha256=00" } });
await page.waitForSelector("[data-testid=bin-request]");
await page.click("[data-testid=bin-request] .reqline");
await page.screenshot({ path: `${out}/inspector-1440.png` });
await browser.close();
