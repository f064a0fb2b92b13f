import { test, expect, Browser, CDPSession, Page } from "@playwright/test";
import { login, OWNER } from "./helpers";

// A support engineer on a hotel connection: the dashboard's first page, cold and warm.
// Slow 4G as Chromium's DevTools define it (1.6 Mbit/s down, 750 kbit/s up, 150 ms RTT).
const SLOW_4G = {
  offline: false,
  latency: 150,
  downloadThroughput: (1.6 * 1024 * 1024) / 8,
  uploadThroughput: (750 * 1024) / 8,
  connectionType: "cellular4g" as const,
};
const PAGE = "/developers/deliveries";
/** Everything but the page's HTML, compressed, on a cold cache: 300.6 KB on 2026-12-07,
 * since the page has a bundle of its own that holds no other page (401.6 KB before; see
 * BENCHMARKS.md). The budget is the product's 400 KB. */
const BUDGET_BYTES = 400 * 1000;
const RUNS = Number(process.env.POSTHORN_FIRST_LOAD_RUNS || 1);

type Fetched = { url: string; type: string; bytes: number; encoding: string; cached: boolean };
type Load = { ms: number; fetched: Fetched[] };

/** Records, until `stop()`, every response the page receives and the bytes it took on the wire. */
async function recordNetwork(cdp: CDPSession) {
  const byId = new Map<string, Fetched>();
  const fromCache = new Set<string>();
  const done: Fetched[] = [];
  cdp.on("Network.requestServedFromCache", (e: any) => fromCache.add(e.requestId));
  cdp.on("Network.responseReceived", (e: any) => {
    const enc = Object.entries(e.response.headers as Record<string, string>)
      .find(([k]) => k.toLowerCase() === "content-encoding")?.[1] ?? "";
    byId.set(e.requestId, {
      url: e.response.url, type: e.type, bytes: 0, encoding: enc,
      cached: fromCache.has(e.requestId) || !!(e.response.fromDiskCache || e.response.fromMemoryCache),
    });
  });
  cdp.on("Network.loadingFinished", (e: any) => {
    const f = byId.get(e.requestId);
    if (f) {
      f.cached ||= e.encodedDataLength === 0;
      f.bytes = f.cached ? 0 : e.encodedDataLength;
      done.push(f);
    }
  });
  return () => done.slice();
}

/** Time from navigation start to `body[data-hydrated="true"]`, and what was fetched until then. */
async function openThrottled(page: Page, cdp: CDPSession): Promise<Load> {
  const stop = await recordNetwork(cdp);
  await page.goto(PAGE, { waitUntil: "commit" });
  await page.waitForFunction(() => (window as any).__hydratedAt !== undefined, null, { timeout: 60_000 });
  const ms = await page.evaluate(() => (window as any).__hydratedAt as number);
  return { ms: Math.round(ms), fetched: stop() };
}

async function newThrottledPage(browser: Browser, storageState: any) {
  const context = await browser.newContext({ storageState });
  await context.addInitScript(() => {
    new MutationObserver((_, obs) => {
      if (document.body?.getAttribute("data-hydrated") === "true") {
        (window as any).__hydratedAt = performance.now();
        obs.disconnect();
      }
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-hydrated"] });
  });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.emulateNetworkConditions", SLOW_4G);
  return { context, page, cdp };
}

const kb = (n: number) => `${(n / 1000).toFixed(1)} KB`;
const notHtml = (f: Fetched) => f.type !== "Document";
const sum = (fs: Fetched[]) => fs.reduce((n, f) => n + f.bytes, 0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function report(label: string, loads: Load[]) {
  const last = loads[loads.length - 1];
  console.log(`${label}: ${median(loads.map((l) => l.ms))} ms to hydrated (runs: ${loads.map((l) => l.ms).join(", ")}), ` +
    `${kb(sum(last.fetched))} transferred, ${kb(sum(last.fetched.filter(notHtml)))} of it not HTML`);
  for (const f of last.fetched) {
    console.log(`  ${f.cached ? "cache" : kb(f.bytes).padStart(9)}  ${(f.encoding || "identity").padEnd(8)} ${f.url.replace(/^https?:\/\/[^/]+/, "")}`);
  }
}

test.describe("The dashboard's first load", () => {
  test("the deliveries page on slow 4G: cold cache within the byte budget, warm fetches only the page", async ({ page, browser }) => {
    test.setTimeout(60_000 + RUNS * 60_000);
    await login(page, OWNER);
    const storageState = await page.context().storageState();
    const cold: Load[] = [];
    const warm: Load[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = await newThrottledPage(browser, storageState);
      cold.push(await openThrottled(t.page, t.cdp));
      await t.page.goto("about:blank");
      warm.push(await openThrottled(t.page, t.cdp));
      await t.context.close();
    }
    report("cold", cold);
    report("warm", warm);

    const coldAssets = cold[cold.length - 1].fetched.filter(notHtml);
    expect(coldAssets.some((f) => f.url.endsWith(".wasm"))).toBe(true);
    expect(sum(coldAssets)).toBeLessThanOrEqual(BUDGET_BYTES);
    // Warm: the assets come from the cache without asking the server.
    const warmAssetsFetched = warm[warm.length - 1].fetched.filter((f) => /\/pkg\//.test(f.url) && !f.cached);
    expect(warmAssetsFetched.map((f) => f.url)).toEqual([]);
  });

  test("assets are compressed and cached for good, pages are never stored", async ({ page, request }) => {
    await login(page, OWNER);
    const html = await (await page.request.get(PAGE)).text();
    const assets = [...html.matchAll(/\/pkg\/[^"'\s)]+\.(?:js|wasm|css)/g)].map((m) => m[0]);
    expect(new Set(assets.map((a) => a.split(".").pop()))).toEqual(new Set(["js", "wasm", "css"]));
    for (const asset of new Set(assets)) {
      // Content-hashed: the name changes whenever the bytes do.
      expect(asset).toMatch(/\/pkg\/posthorn\.[0-9a-f]{16,}\.(js|wasm|css)$/);
      for (const encoding of ["br", "gzip"]) {
        const res = await request.get(asset, { headers: { "Accept-Encoding": encoding } });
        expect(res.status(), asset).toBe(200);
        expect(res.headers()["content-encoding"], `${asset} with ${encoding}`).toBe(encoding);
        expect(res.headers()["vary"]?.toLowerCase()).toContain("accept-encoding");
        expect(res.headers()["cache-control"]).toBe("public, max-age=31536000, immutable");
      }
      const plain = await request.get(asset, { headers: { "Accept-Encoding": "identity" } });
      expect(plain.headers()["content-encoding"]).toBeUndefined();
    }

    const pageRes = await page.request.get(PAGE, { headers: { "Accept-Encoding": "br, gzip" } });
    expect(pageRes.status()).toBe(200);
    expect(pageRes.headers()["cache-control"]).toBe("no-store");
    expect(["br", "gzip"]).toContain(pageRes.headers()["content-encoding"]);
    expect(pageRes.headers()["vary"]?.toLowerCase()).toContain("accept-encoding");
    const login_ = await request.get("/login", { headers: { "Accept-Encoding": "gzip" } });
    expect(login_.headers()["cache-control"]).toBe("no-store");
    expect(login_.headers()["content-encoding"]).toBe("gzip");
  });
});
