import { test, expect, APIRequestContext, Page } from "@playwright/test";
import { execFileSync } from "node:child_process";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { e2eDatabaseUrl, BASE_URL } from "./env";
import { api, startReceiver } from "./helpers";

// A platform embeds its customers' delivery log: its page (another site, on
// http://localhost) frames a portal link of Posthorn (http://127.0.0.1). Everything is
// made through the operator API, as the platform's backend would.

function sql(query: string): string {
  return execFileSync(process.env.POSTHORN_PSQL || "psql", [e2eDatabaseUrl(), "-tAc", query], { encoding: "utf8" }).trim();
}

function operatorKey(): string {
  const out = execFileSync(process.env.POSTHORN_BIN!, ["create-operator-key", "--name", `e2e-${Date.now()}`], {
    env: { ...process.env, DATABASE_URL: e2eDatabaseUrl() }, encoding: "utf8",
  });
  return JSON.parse(out.trim()).operator_key;
}

/** The platform's own page: frames whatever `?src=` names. */
async function platformPage() {
  const server = http.createServer((req, res) => {
    const src = new URL(req.url!, "http://localhost").searchParams.get("src") || "";
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!DOCTYPE html><meta charset="utf-8"><title>Acme</title><h1 style="font:16px sans-serif">Acme settings · Webhooks</h1>
<iframe id="portal" src="${src.replace(/"/g, "&quot;")}" style="width:1280px;height:760px;border:1px solid #ccc"></iframe>`);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://localhost:${port}`, close: () => server.close() };
}

async function operator(request: APIRequestContext, key: string, method: string, path: string, data?: unknown) {
  const res = await request.fetch(`${BASE_URL}/operator/v1${path}`, { method, data, headers: { Authorization: `Bearer ${key}` } });
  return { status: res.status(), body: await res.json().catch(() => null), headers: res.headers() };
}

async function link(request: APIRequestContext, key: string, project: number, role: string) {
  const r = await operator(request, key, "POST", `/projects/${project}/portal-links`, {
    user: { id: "cus_ana", email: "ana@acme.example", name: "Ana" }, role,
  });
  expect(r.status).toBe(201);
  return r.body.url as string;
}

async function framed(page: Page, origin: string, url: string) {
  await page.goto(`${origin}/?src=${encodeURIComponent(url)}`);
  return page.frameLocator("#portal");
}

test("a platform frames its customer's delivery log: a member retries, a viewer only reads, links work once", async ({ page, request }) => {
  test.setTimeout(120_000);
  const key = operatorKey();
  const platform = await platformPage();
  const other = await platformPage();
  const receiver = await startReceiver();
  try {
    const created = await operator(request, key, "POST", "/projects", {
      name: "Acme", uid: `cus_${Date.now()}`, frame_ancestors: [platform.origin],
      brand: { name: "Acme Webhooks", accent: "#0f766e" },
    });
    expect(created.status).toBe(201);
    const project = created.body.id as number;
    const apiKey = (await operator(request, key, "POST", `/projects/${project}/api-keys`, { name: "backend" })).body.key;
    expect((await api(request, apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] })).status()).toBe(201);
    expect((await api(request, apiKey, "POST", "/events", { event: "invoice.paid", data: { note: "<img src=x onerror=alert(1)>" } })).status()).toBeLessThan(300);
    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBeGreaterThan(0);

    // A member, inside the platform's page: the brand, the log, and Retry.
    const memberLink = await link(request, key, project, "member");
    const frame = await framed(page, platform.origin, memberLink);
    await expect(frame.locator("body")).toHaveAttribute("data-hydrated", "true");
    await expect(frame.getByTestId("portal-brand")).toHaveText("Acme Webhooks");
    await expect(frame.getByTestId("portal-role")).toHaveText("member");
    await expect(frame.getByTestId("project-switcher")).toHaveCount(0);
    await frame.getByTestId("delivery-row").first().click();
    await expect(frame.getByTestId("delivery-detail")).toBeVisible();
    await expect(frame.getByTestId("detail-payload")).toContainText("<img src=x onerror=alert(1)>");
    await frame.getByTestId("retry-button").click();
    await expect(frame.getByTestId("action-message")).toContainText("Retry queued");
    await page.screenshot({ path: "../docs/screenshots/portal.png" });
    // Another project's delivery is unknown inside this session.
    const foreignForm = sql(`SELECT 'project_id=' || project_id || '&id=' || id FROM delivery_log WHERE project_id <> ${project} ORDER BY id LIMIT 1`);
    const memberFrame = page.frames().find((f) => f.url().startsWith(BASE_URL))!;
    const foreign = await memberFrame.evaluate(async (form) => {
      const r = await fetch("/api/get_delivery_detail", {
        method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form,
      });
      return r.status;
    }, foreignForm);
    expect(foreign).toBe(404);
    // The same link a second time makes no session.
    const again = await framed(page, platform.origin, memberLink);
    await expect(again.getByTestId("portal-notice")).toContainText("This link cannot be used");

    // A forged link and an expired one make no session either.
    const forged = await framed(page, platform.origin, `${BASE_URL}/portal/pl_forged0000000000000000`);
    await expect(forged.getByTestId("portal-notice")).toContainText("This link cannot be used");
    const expiring = await link(request, key, project, "member");
    sql(`UPDATE portal_links SET expires_at = now() - interval '1 second' WHERE project_id = ${project} AND used_at IS NULL`);
    const expired = await framed(page, platform.origin, expiring);
    await expect(expired.getByTestId("portal-notice")).toContainText("This link cannot be used");

    // A viewer sees no action buttons, and the server refuses the action anyway.
    const viewer = await framed(page, platform.origin, await link(request, key, project, "viewer"));
    await expect(viewer.locator("body")).toHaveAttribute("data-hydrated", "true");
    await expect(viewer.getByTestId("portal-role")).toHaveText("viewer");
    await expect(viewer.getByTestId("bulk-retry-button")).toHaveCount(0);
    await viewer.getByTestId("delivery-row").first().click();
    await expect(viewer.getByTestId("delivery-detail")).toBeVisible();
    await expect(viewer.getByTestId("retry-button")).toHaveCount(0);
    const row = viewer.getByTestId("delivery-row").first();
    const deliveryId = await row.getAttribute("data-id");
    const portalFrame = page.frames().find((f) => f.url().startsWith(BASE_URL))!;
    const status = await portalFrame.evaluate(async ([p, id]) => {
      const r = await fetch("/api/retry_delivery", {
        method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `project_id=${p}&id=${id}`,
      });
      return r.status;
    }, [String(project), String(deliveryId)]);
    expect(status).toBe(403);
    // The pages a portal user has no business on answer 404.
    await viewer.locator("body").evaluate(() => {});
    const keysStatus = await portalFrame.evaluate(async () => (await fetch("/developers/keys")).status);
    expect(keysStatus).toBe(404);

    // An origin the operator did not list cannot frame the portal.
    const refused = page.waitForResponse((r) => r.url().startsWith(`${BASE_URL}/developers/deliveries`));
    await framed(page, other.origin, await link(request, key, project, "member"));
    const csp = (await refused).headers()["content-security-policy"];
    expect(csp).toContain(`frame-ancestors ${platform.origin}`);
    expect(csp).not.toContain(other.origin);
    await expect(page.frameLocator("#portal").getByTestId("portal-header")).toHaveCount(0);
  } finally {
    platform.close();
    other.close();
    receiver.close();
  }
});
