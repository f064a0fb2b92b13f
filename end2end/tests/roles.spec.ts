import { test, expect } from "@playwright/test";
import { hydrated, login, SUPPORT } from "./helpers";

test("support staff are offered only what they may do, and see whose each delivery is", async ({ page }) => {
  await login(page, SUPPORT);
  // The demo project, which has endpoints (support's first project by name may be
  // another test's, with none).
  await page.getByTestId("project-switcher").selectOption({ label: "Demo" });
  await expect(page.getByTestId("project-name")).toHaveText("Demo");
  // Shown as support, with no link to the keys support may not read.
  await expect(page.getByTestId("user-role")).toHaveText("support");
  await expect(page.locator("header nav").getByRole("link", { name: "API keys" })).toHaveCount(0);
  await expect(page.locator(".cards").getByRole("link", { name: /API keys/ })).toHaveCount(0);
  await page.goto("/developers/webhooks");
  await hydrated(page);
  await expect(page.getByTestId("endpoint-row").first()).toBeVisible();
  // Support is no project's member: no e-mail choice, and saving the panel as it is works.
  const panel = page.getByTestId("alerts-panel");
  await expect(panel.getByTestId("failing-after-input")).toBeVisible();
  await expect(panel.getByTestId("email-alerts-toggle")).toHaveCount(0);
  await panel.getByTestId("save-alerts-button").click();
  await expect(page.getByTestId("alerts-message")).toHaveText("Alert settings saved.");
  for (const id of ["create-endpoint-button", "edit-endpoint-button", "test-send-button", "toggle-endpoint-button",
    "reveal-secret-button", "rotate-secret-button", "delete-endpoint-button", "ops-endpoint-button"]) {
    await expect(page.getByTestId(id), id).toHaveCount(0);
  }
  await page.goto("/developers/keys");
  await hydrated(page);
  await expect(page.getByTestId("create-key-button")).toHaveCount(0);
  await expect(page.getByTestId("revoke-key-button")).toHaveCount(0);
  await page.goto("/developers/team");
  await hydrated(page);
  await expect(page.getByTestId("invite-button")).toHaveCount(0);
  await expect(page.getByTestId("remove-member-button")).toHaveCount(0);
  await expect(page.getByTestId("role-select")).toHaveCount(0);
  await page.goto("/developers/events");
  await hydrated(page);
  await expect(page.getByTestId("event-type-row").first()).toBeVisible();
  await expect(page.getByTestId("edit-schema")).toHaveCount(0);

  // Deliveries: whose each row is, and Retry and Redirect, which support may use.
  await page.goto("/developers/deliveries");
  await hydrated(page);
  const row = page.getByTestId("delivery-row").first();
  const current = (await page.getByTestId("project-name").textContent())!.trim();
  await expect(row.getByTestId("row-project")).toHaveText(current);
  await row.locator(".drow").click({ position: { x: 12, y: 8 } });
  await expect(page.getByTestId("retry-button")).toBeVisible();
  await expect(page.getByTestId("redirect-button")).toBeVisible();
});
