import { test, expect } from "@playwright/test";
import { hydrated, login, OWNER } from "./helpers";

test("the demo owner signs in and lands in the cabinet of project Demo", async ({ page }) => {
  await login(page, OWNER);
  await expect(page.getByTestId("user-email")).toHaveText(OWNER.email);
  await expect(page.getByTestId("project-name")).toHaveText("Demo");
  await expect(page.getByRole("link", { name: "Webhook Delivery" })).toBeVisible();
});

test("a wrong password gets a clear message and no session", async ({ page }) => {
  await page.goto("/login");
  await hydrated(page);
  await page.getByTestId("login-email").fill(OWNER.email);
  await page.getByTestId("login-password").fill("not-the-password");
  await page.getByTestId("login-submit").click();
  await expect(page.getByRole("alert")).toHaveText("Wrong email or password.");
  await page.goto("/developers");
  await expect(page).toHaveURL(/\/login\?next=%2Fdevelopers$/);
});

test("a refused sign-in answers 401", async ({ request }) => {
  const res = await request.post("/api/login", { form: { email: OWNER.email, password: "not-the-password" } });
  expect(res.status()).toBe(401);
  expect(await res.text()).toContain("Wrong email or password.");
});

test("anonymous visitors of /developers pages are sent to /login with where they were going", async ({ page, request }) => {
  const res = await request.get("/developers/deliveries?status=failed&q=evt_1", { maxRedirects: 0 });
  expect([302, 303, 307]).toContain(res.status());
  expect(res.headers()["location"]).toBe("/login?next=%2Fdevelopers%2Fdeliveries%3Fstatus%3Dfailed%26q%3Devt_1");
  await page.goto("/developers");
  await expect(page).toHaveURL(/\/login\?next=%2Fdevelopers$/);
});

test("a shared link opened signed out lands on that view after sign-in, with the address bar saying so", async ({ page }) => {
  const link = "/developers/deliveries?status=succeeded&event_type=payment.succeeded";
  await page.goto(link);
  await expect(page).toHaveURL(/\/login\?next=/);
  await hydrated(page);
  await page.getByTestId("login-email").fill(OWNER.email);
  await page.getByTestId("login-password").fill(OWNER.password);
  await page.getByTestId("login-submit").click();
  await page.waitForURL((u) => u.pathname + u.search === link);
  await hydrated(page);
  await expect(page.getByTestId("delivery-row").first()).toHaveAttribute("data-status", "succeeded");
});

test("a next that leads off the site is ignored: sign-in lands in the cabinet", async ({ page }) => {
  for (const next of ["//evil.example/", "https://evil.example/", "/\\evil.example"]) {
    await page.context().clearCookies();
    await page.goto(`/login?next=${encodeURIComponent(next)}`);
    await hydrated(page);
    await page.getByTestId("login-email").fill(OWNER.email);
    await page.getByTestId("login-password").fill(OWNER.password);
    await page.getByTestId("login-submit").click();
    await page.waitForURL((u) => u.pathname === "/developers");
    expect(new URL(page.url()).host).toBe(new URL(page.url()).host);
    expect(page.url()).not.toContain("evil");
  }
});

test("the session cookie is HttpOnly and SameSite=Lax, and sign-out ends it", async ({ page, context }) => {
  await login(page, OWNER);
  const cookie = (await context.cookies()).find((c) => c.name === "posthorn_session");
  expect(cookie?.httpOnly).toBe(true);
  expect(cookie?.sameSite).toBe("Lax");
  await page.goto("/logout");
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto("/developers");
  await expect(page).toHaveURL(/\/login\?next=%2Fdevelopers$/);
});
