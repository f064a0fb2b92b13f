import { test, expect } from "@playwright/test";
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { api, createProject, hydrated, login, startReceiver, webhooksPageOfNewProject, OWNER, SUPPORT } from "./helpers";
import { BASE_URL } from "./env";

function botix(secret: string, ts: string, body: string) {
  return "sha256=" + createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex");
}
function standard(secret: string, id: string, ts: string, body: string) {
  return "v1," + createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update(`${id}.${ts}.${body}`).digest("base64");
}

test("after a rotation the next delivery carries two signatures, valid for the old and new secret", async ({ page }) => {
  const { receiver } = await webhooksPageOfNewProject(page, "Rotation");
  await page.getByTestId("endpoint-url-input").fill(receiver.url);
  await page.getByTestId("create-endpoint-button").click();
  const oldSecret = (await page.getByTestId("new-endpoint-secret").textContent())!.trim();
  const card = page.getByTestId("endpoint-row");
  await card.getByTestId("rotate-secret-button").click();
  await expect(card.getByRole("dialog")).toContainText("keeps signing too for 24 h");
  await card.getByTestId("confirm-action").click();
  await expect(card.getByTestId("endpoint-secret")).toContainText("whsec_");
  const newSecret = (await card.getByTestId("endpoint-secret").textContent())!.trim();
  expect(newSecret).not.toBe(oldSecret);
  await card.getByTestId("test-send-button").click();
  await expect(card.getByTestId("test-send-result")).toHaveAttribute("data-status", "succeeded", { timeout: 15_000 });

  const r = receiver.received[0];
  const ts = r.headers["x-botix-timestamp"] as string;
  const id = r.headers["webhook-id"] as string;
  const botixSigs = (r.headers["x-botix-signature"] as string).split(",").map((s) => s.trim());
  const stdSigs = (r.headers["webhook-signature"] as string).split(" ");
  expect(botixSigs).toEqual([botix(newSecret, ts, r.body), botix(oldSecret, ts, r.body)]);
  expect(stdSigs).toEqual([standard(newSecret, id, ts, r.body), standard(oldSecret, id, ts, r.body)]);
  receiver.close();
});

test("support staff find another project's delivery by request id and open it", async ({ page, request }) => {
  const receiver = await startReceiver();
  const p = createProject("Support case");
  await api(request, p.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["*"] });
  await api(request, p.apiKey, "POST", "/events", { event: "payment.succeeded", data: { ticket: 42 } });
  let requestId = "";
  await expect.poll(async () => {
    const data = (await (await api(request, p.apiKey, "GET", "/deliveries")).json()).data;
    requestId = data[0]?.request_id ?? "";
    return data[0]?.status;
  }).toBe("succeeded");

  await login(page, SUPPORT);
  await page.goto("/developers/deliveries");
  await hydrated(page);
  await page.getByTestId("search-input").fill(requestId);
  await page.getByTestId("search-input").press("Enter");
  const row = page.getByTestId("delivery-row");
  await expect(row).toHaveCount(1);
  await expect(row).toHaveAttribute("data-project", String(p.projectId));
  await row.click();
  await expect(page.getByTestId("detail-payload")).toContainText('"ticket": 42');
  receiver.close();
});

test("an owner cannot reach another project's endpoints, secrets or audit", async ({ page, request }) => {
  const p = createProject("Private");
  const hook = await (await api(request, p.apiKey, "POST", "/webhooks", { url: "https://example.com/x", events: ["*"] })).json();
  await login(page, OWNER);
  const call = (name: string, form: Record<string, string>) =>
    page.evaluate(async ([name, form]) => {
      const r = await fetch(`/api/${name}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form as Record<string, string>).toString(),
      });
      return { status: r.status, text: await r.text() };
    }, [name, form] as const);
  for (const name of ["reveal_secret", "rotate_secret", "test_send", "delete_endpoint"]) {
    const r = await call(name, { id: String(hook.id) });
    expect(r.status, name).toBeGreaterThanOrEqual(400);
    expect(r.text, name).toContain("not found");
    expect(r.text, name).not.toContain("whsec_");
  }
  const update = await call("update_endpoint", { id: String(hook.id), enabled: "false" });
  expect(update.text).toContain("not found");
  const audit = await call("switch_project", { project_id: String(p.projectId) });
  expect(audit.text).toContain("not found");
  // Still intact for its owner.
  const still = await (await api(request, p.apiKey, "GET", `/webhooks/${hook.id}`)).json();
  expect(still.enabled).toBe(true);
});

test("an owner limits an endpoint to 5 attempts a second in its edit form, and lifts the limit again", async ({ page, request }) => {
  const { receiver, project } = await webhooksPageOfNewProject(page, "Throttle");
  await page.getByTestId("endpoint-url-input").fill(receiver.url);
  await page.getByTestId("create-endpoint-button").click();
  const card = page.getByTestId("endpoint-row");
  await expect(card.getByTestId("endpoint-rate-limit")).toHaveText("No rate limit");
  await card.getByTestId("edit-endpoint-button").click();
  await card.getByTestId("edit-rate-limit-input").fill("5");
  await page.screenshot({ path: "../docs/screenshots/endpoint-rate-limit-form.png" });
  await card.getByTestId("save-endpoint-button").click();
  await expect(card.getByTestId("endpoint-rate-limit")).toHaveText("Rate limit: 5/s");
  const id = await card.getAttribute("data-endpoint-id");
  const shown = await (await api(request, project.apiKey, "GET", `/webhooks/${id}`)).json();
  expect(shown.rate_limit).toBe(5);

  await card.getByTestId("edit-endpoint-button").click();
  await card.getByTestId("edit-rate-limit-input").fill("");
  await card.getByTestId("save-endpoint-button").click();
  await expect(card.getByTestId("endpoint-rate-limit")).toHaveText("No rate limit");
  receiver.close();
});

/** A self-signed certificate and its key, made by openssl: [cert PEM, key PEM]. */
function certificate(cn: string, days = 30): [string, string] {
  const { execFileSync } = require("node:child_process") as typeof import("node:child_process");
  const { mkdtempSync, readFileSync, rmSync } = require("node:fs") as typeof import("node:fs");
  const dir = mkdtempSync(require("node:path").join(require("node:os").tmpdir(), "cert-"));
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", `${dir}/k.pem`, "-out", `${dir}/c.pem`, "-days", String(days), "-subj", `/CN=${cn}`], { stdio: "ignore" });
  const pair: [string, string] = [readFileSync(`${dir}/c.pem`, "utf8"), readFileSync(`${dir}/k.pem`, "utf8")];
  rmSync(dir, { recursive: true });
  return pair;
}

test("a client certificate is set, shown by subject and expiry, refused with its reason, and removed", async ({ page }) => {
  const { receiver } = await webhooksPageOfNewProject(page, "Client certificate");
  await page.getByTestId("endpoint-url-input").fill(receiver.url);
  await page.getByTestId("create-endpoint-button").click();
  const card = page.getByTestId("endpoint-row");
  await expect(card).toHaveCount(1);
  await expect(card.getByTestId("client-cert")).toHaveCount(0);

  // A key that is not the certificate's: the page comes back with the reason, the form open.
  const [cert, key] = certificate("shop-client");
  const [, otherKey] = certificate("someone-else");
  await card.getByTestId("client-cert-toggle").click();
  await card.getByTestId("client-cert-input").fill(cert);
  await card.getByTestId("client-key-input").fill(otherKey);
  await card.getByTestId("set-client-cert-button").click();
  await expect(card.getByTestId("client-cert-error")).toContainText("does not belong");
  await expect(card.getByTestId("client-cert")).toHaveCount(0);

  await card.getByTestId("client-cert-input").fill(cert);
  await card.getByTestId("client-key-input").fill(key);
  await card.getByTestId("set-client-cert-button").click();
  await expect(card.getByTestId("client-cert")).toContainText("CN=shop-client");
  await expect(card.getByTestId("client-cert")).toContainText(/in (29|30) days/);
  await expect(card.getByTestId("client-cert-error")).toHaveCount(0);
  // Write-only: the key is nowhere in the page.
  expect(await page.content()).not.toContain("PRIVATE KEY-----\n");

  await card.getByTestId("client-cert-toggle").click();
  await card.getByTestId("remove-client-cert-button").click();
  await expect(card.getByTestId("client-cert")).toHaveCount(0);
  receiver.close();
});

test("a posthorn listen session shows on its card, takes a test send through the CLI and waits when the CLI is gone", async ({ page }) => {
  const { receiver, project } = await webhooksPageOfNewProject(page, "Listen");
  const cli = spawn(process.env.POSTHORN_BIN!, ["listen", "--server", BASE_URL, "--forward", receiver.url, "--name", "laptop"], {
    env: { ...process.env, POSTHORN_API_KEY: project.apiKey },
  });
  let err = "";
  cli.stderr.on("data", (d) => (err += d));
  try {
    await expect.poll(() => err, { timeout: 15_000 }).toContain("connected");
    await page.reload();
    await hydrated(page);
    const card = page.getByTestId("endpoint-row");
    await expect(card.getByTestId("listen-badge")).toHaveText("Listen session · laptop · connected");
    await page.screenshot({ path: "../docs/screenshots/endpoint-listen-session.png" });
    await card.getByTestId("test-send-button").click();
    await expect(card.getByTestId("test-send-result")).toHaveAttribute("data-status", "succeeded", { timeout: 15_000 });
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0].headers["webhook-signature"]).toMatch(/^v1,/);
  } finally {
    cli.kill("SIGINT");
    await new Promise((r) => cli.once("exit", r));
    receiver.close();
  }
  // Named: it waits for its CLI (10 minutes), and says so.
  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId("listen-badge")).toHaveText("Listen session · laptop · waiting");
});

test("a failed test send says what went wrong in words, the client's error under Details; the form starts over", async ({ page }) => {
  const { receiver } = await webhooksPageOfNewProject(page, "Refused test");
  receiver.close();
  // No endpoints yet: the page says what one is and where to see what arrives.
  await expect(page.getByTestId("no-endpoints").getByRole("link", { name: "inspector bin" })).toHaveAttribute("href", "/inspector");
  await page.getByTestId("endpoint-url-input").fill(receiver.url);
  await page.getByTestId("endpoint-types-input").fill("order.paid");
  await page.getByTestId("create-endpoint-button").click();
  const card = page.getByTestId("endpoint-row");
  await expect(card).toHaveCount(1);
  // Added: the form is empty again for the next endpoint.
  await expect(page.getByTestId("endpoint-url-input")).toHaveValue("");
  await expect(page.getByTestId("endpoint-types-input")).toHaveValue("*");
  await card.getByTestId("test-send-button").click();
  const result = card.getByTestId("test-send-result");
  await expect(result).not.toHaveAttribute("data-status", /pending|in_flight/, { timeout: 15_000 });
  await expect(result.getByTestId("test-send-explained")).toContainText("Could not connect to the endpoint's server");
  await expect(result.getByTestId("test-send-explained")).not.toContainText("os error");
  await result.getByText("Details").click();
  await expect(result.locator("details code")).toContainText(/connect/i);
  // The signature headers are explained on the page.
  const help = page.getByTestId("signature-help");
  await help.locator("summary").click();
  await expect(help).toContainText("X-Botix-Signature: sha256=");
  await expect(help).toContainText("{X-Botix-Timestamp}.{raw body}");
});
