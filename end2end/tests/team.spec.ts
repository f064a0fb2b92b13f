import { test, expect, Browser, Page } from "@playwright/test";
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

/** The owner of `p` (signed in on `page`) invites a newcomer, who joins in a browser of
 * their own; returns that browser's page, its context and the newcomer's address. */
async function inviteAndJoin(page: Page, browser: Browser, project: string) {
  await page.goto("/developers/team");
  await hydrated(page);
  const newcomer = `new-${Date.now()}-${Math.random().toString(36).slice(2, 7)}@example.com`;
  await page.getByTestId("invite-email").fill(newcomer);
  await page.getByTestId("invite-button").click();
  const link = (await page.getByTestId("invite-link").textContent())!.trim();
  expect(link).toContain("/invite/");
  const path = new URL(link).pathname;

  const ctx = await browser.newContext();
  const guest = await ctx.newPage();
  await guest.goto(path);
  await hydrated(guest);
  await expect(guest.getByRole("heading", { level: 1 })).toHaveText(`Join ${project}`);
  await guest.getByTestId("invite-password").fill("guest-password-1");
  await guest.getByTestId("accept-invite-button").click();
  await guest.waitForURL("**/developers");
  await hydrated(guest);
  await expect(guest.getByTestId("project-name")).toHaveText(project);
  await expect(guest.getByTestId("user-email")).toHaveText(newcomer);
  return { ctx, guest, newcomer, path };
}

test("an owner invites a member with a one-time link; the last owner cannot be removed", async ({ page, browser }) => {
  const p = createProject("Invites");
  await login(page, { email: p.email, password: p.password });
  const { ctx, guest, newcomer, path } = await inviteAndJoin(page, browser, "Invites");
  // A member is shown as one, and offered nothing on the team but their own password.
  await expect(guest.getByTestId("user-role")).toHaveText("member");
  await guest.goto("/developers/team");
  await hydrated(guest);
  await expect(guest.getByTestId("member-row")).toHaveCount(2);
  for (const id of ["invite-button", "remove-member-button", "role-select"]) {
    await expect(guest.getByTestId(id), id).toHaveCount(0);
  }
  await expect(guest.getByTestId("member-row").filter({ hasText: newcomer })).toContainText("member");
  // The link works once.
  const again = await ctx.newPage();
  await again.goto(path);
  await hydrated(again);
  await expect(again.getByTestId("invite-error")).toContainText("unknown, used or expired");
  await ctx.close();

  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId("member-row")).toHaveCount(2);
  // The only owner is offered neither Remove nor another role on their own row.
  const mine = page.getByTestId("member-row").filter({ hasText: p.email });
  await expect(mine.getByTestId("remove-member-button")).toHaveCount(0);
  await expect(mine.getByTestId("role-select")).toBeDisabled();
  await expect(mine.getByTestId("role-select")).toHaveAttribute("title", /make someone else an owner first/);
  await page.getByTestId("member-row").filter({ hasText: newcomer }).getByTestId("remove-member-button").click();
  await page.getByTestId("member-row").filter({ hasText: newcomer }).getByTestId("confirm-action").click();
  await expect(page.getByTestId("member-row")).toHaveCount(1);
});

test("an owner changes a member's role in the dashboard, and the new role is enforced", async ({ page, browser }) => {
  const p = createProject("Roles");
  await login(page, { email: p.email, password: p.password });
  const { ctx, guest, newcomer } = await inviteAndJoin(page, browser, "Roles");
  await page.reload();
  await hydrated(page);
  const theirs = page.getByTestId("member-row").filter({ hasText: newcomer });
  await expect(theirs.getByTestId("role-select")).toHaveValue("member");
  await expect(theirs.getByTestId("role-select")).toHaveAccessibleName(`Role of ${newcomer}`);
  await theirs.getByTestId("role-select").selectOption("owner");
  // Two owners now: either may leave the role, and the list says so.
  await expect(page.getByTestId("member-row").filter({ hasText: p.email }).getByTestId("role-select")).toBeEnabled();
  await expect(theirs.getByTestId("role-select")).toHaveValue("owner");

  // The newcomer, an owner now, manages the team and makes the first owner a member.
  await guest.goto("/developers/team");
  await hydrated(guest);
  await expect(guest.getByTestId("user-role")).toHaveText("owner");
  await expect(guest.getByTestId("invite-button")).toBeVisible();
  await guest.getByTestId("member-row").filter({ hasText: p.email }).getByTestId("role-select").selectOption("member");
  await expect(guest.getByTestId("member-row").filter({ hasText: p.email }).getByTestId("role-select")).toHaveValue("member");
  // The newcomer is the only owner now: their own role is locked.
  await expect(guest.getByTestId("member-row").filter({ hasText: newcomer }).getByTestId("role-select")).toBeDisabled();
  await ctx.close();

  // The first owner, a member now, is shown as one and offered no team controls; the
  // server refuses the call the control would make.
  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId("user-role")).toHaveText("member");
  for (const id of ["invite-button", "remove-member-button", "role-select"]) {
    await expect(page.getByTestId(id), id).toHaveCount(0);
  }
  const refused = await page.evaluate(async (email) => {
    const r = await fetch("/api/set_member_role", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ email, role: "owner" }).toString(),
    });
    return r.status;
  }, p.email);
  expect(refused).toBe(403);
});
