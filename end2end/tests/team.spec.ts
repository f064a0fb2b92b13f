import { test, expect } from "@playwright/test";
import { createProject, hydrated, login } from "./helpers";

test("a user changes their password and signs in with the new one", async ({ page }) => {
  const p = createProject("Team");
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/team");
  await hydrated(page);
  await expect(page.getByTestId("member-row")).toContainText(p.email);
  await page.getByTestId("current-password").fill("not-my-password");
  await page.getByTestId("new-password").fill("new-password-456");
  await page.getByTestId("change-password-button").click();
  await expect(page.getByRole("alert")).toContainText("current password is wrong");
  await page.getByTestId("current-password").fill(p.password);
  await page.getByTestId("new-password").fill("new-password-456");
  await page.getByTestId("change-password-button").click();
  await expect(page.getByRole("status")).toContainText("Password changed.");
  await page.goto("/logout");
  await page.getByRole("button", { name: "Sign out" }).click();
  await login(page, { email: p.email, password: "new-password-456" });
  await expect(page.getByTestId("project-name")).toHaveText("Team");
});

test("an owner invites a member with a one-time link; the last owner cannot be removed", async ({ page, browser }) => {
  const p = createProject("Invites");
  await login(page, { email: p.email, password: p.password });
  await page.goto("/developers/team");
  await hydrated(page);
  const newcomer = `new-${Date.now()}@example.com`;
  await page.getByTestId("invite-email").fill(newcomer);
  await page.getByTestId("invite-button").click();
  const link = (await page.getByTestId("invite-link").textContent())!.trim();
  expect(link).toContain("/invite/");
  const path = new URL(link).pathname;

  const ctx = await browser.newContext();
  const guest = await ctx.newPage();
  await guest.goto(path);
  await hydrated(guest);
  await expect(guest.getByRole("heading", { level: 1 })).toHaveText("Join Invites");
  await guest.getByTestId("invite-password").fill("guest-password-1");
  await guest.getByTestId("accept-invite-button").click();
  await guest.waitForURL("**/developers");
  await hydrated(guest);
  await expect(guest.getByTestId("project-name")).toHaveText("Invites");
  await expect(guest.getByTestId("user-email")).toHaveText(newcomer);
  // A member is shown as one, and offered nothing on the team but their own password.
  await expect(guest.getByTestId("user-role")).toHaveText("member");
  await guest.goto("/developers/team");
  await hydrated(guest);
  await expect(guest.getByTestId("member-row")).toHaveCount(2);
  for (const id of ["invite-button", "remove-member-button"]) {
    await expect(guest.getByTestId(id), id).toHaveCount(0);
  }
  // The link works once.
  const again = await ctx.newPage();
  await again.goto(path);
  await hydrated(again);
  await expect(again.getByTestId("invite-error")).toContainText("unknown, used or expired");
  await ctx.close();

  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId("member-row")).toHaveCount(2);
  await page.getByTestId("member-row").filter({ hasText: p.email }).getByTestId("remove-member-button").click();
  await page.getByTestId("member-row").filter({ hasText: p.email }).getByTestId("confirm-action").click();
  await expect(page.getByTestId("member-error")).toContainText("last owner");
  await page.getByTestId("member-row").filter({ hasText: newcomer }).getByTestId("remove-member-button").click();
  await page.getByTestId("member-row").filter({ hasText: newcomer }).getByTestId("confirm-action").click();
  await expect(page.getByTestId("member-row")).toHaveCount(1);
});
