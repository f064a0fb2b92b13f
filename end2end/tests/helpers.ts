import { expect, Page, APIRequestContext } from "@playwright/test";
import { execFileSync } from "node:child_process";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { e2eDatabaseUrl, BASE_URL } from "./env";

export const OWNER = { email: "owner@example.com", password: "demo-password" };
export const SUPPORT = { email: "support@example.com", password: "demo-password" };

/** Every signed-in page without a parameter. */
export const PAGES = [
  "/developers",
  "/developers/deliveries",
  "/developers/webhooks",
  "/developers/keys",
  "/developers/events",
  "/developers/team",
  "/developers/audit",
  "/inspector",
];

export async function hydrated(page: Page) {
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
}

export async function login(page: Page, who: { email: string; password: string }) {
  page.on("pageerror", (e) => console.log(`[pageerror] ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") console.log(`[console.${m.type()}] ${m.text().slice(0, 500)}`); });
  await page.goto("/login");
  await hydrated(page);
  await page.getByTestId("login-email").fill(who.email);
  await page.getByTestId("login-password").fill(who.password);
  await page.getByTestId("login-submit").click();
  await page.waitForURL("**/developers");
  await hydrated(page);
}

/** A new project through the real CLI: its owner and an API key. */
export function createProject(name: string, plan = "business") {
  const email = `owner-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const password = "password-123";
  const out = execFileSync(process.env.POSTHORN_BIN!, [
    "create-project", "--name", name, "--owner-email", email, "--owner-password", password, "--plan", plan,
  ], { env: { ...process.env, DATABASE_URL: e2eDatabaseUrl() }, encoding: "utf8" });
  const { project_id, api_key } = JSON.parse(out.trim());
  return { projectId: project_id as number, apiKey: api_key as string, email, password };
}

/** A live receiver on loopback that counts requests and answers 200. */
export async function startReceiver() {
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const control = { status: 200 };
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(control.status, { "content-type": "application/json" });
      res.end('{"received":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/hook`, received, control, close: () => server.close() };
}

export async function api(request: APIRequestContext, key: string, method: string, path: string, data?: unknown) {
  const res = await request.fetch(`${BASE_URL}/public/v1${path}`, {
    method, data, headers: { Authorization: `Bearer ${key}` },
  });
  return res;
}

/** A new project's owner on /developers/webhooks, signed in, with a live receiver to point endpoints at. */
export async function webhooksPageOfNewProject(page: Page, name: string) {
  const receiver = await startReceiver();
  const p = createProject(name);
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/webhooks");
  await hydrated(page);
  return { receiver, project: p };
}
