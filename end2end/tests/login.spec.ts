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
  await expect(page).toHaveURL(/\/login$/);
});

test("anonymous visitors of /developers pages are sent to /login", async ({ page, request }) => {
  const res = await request.get("/developers/deliveries", { maxRedirects: 0 });
  expect([302, 303, 307]).toContain(res.status());
  expect(res.headers()["location"]).toBe("/login");
  await page.goto("/developers");
  await expect(page).toHaveURL(/\/login$/);
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
  await expect(page).toHaveURL(/\/login$/);
});
