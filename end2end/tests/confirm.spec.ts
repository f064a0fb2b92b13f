import { test, expect } from "@playwright/test";
import { api, webhooksPageOfNewProject } from "./helpers";

test("deleting an endpoint asks first: cancelled, nothing changes; confirmed, it is gone", async ({ page, request }) => {
  const { receiver, project } = await webhooksPageOfNewProject(page, "Confirming");
  await page.getByTestId("endpoint-url-input").fill(receiver.url);
  await page.getByTestId("create-endpoint-button").click();
  const card = page.getByTestId("endpoint-row");
  await expect(card).toHaveCount(1);

  await card.getByTestId("delete-endpoint-button").click();
  const dialog = card.getByRole("dialog");
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText("Delete endpoint #");
  await expect(dialog).toContainText("dead letters");
  await card.screenshot({ path: "../docs/screenshots/confirm-delete-endpoint.png" });
  // Cancel has the focus: Enter alone destroys nothing.
  await expect(dialog.getByTestId("cancel-action")).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(dialog).toHaveCount(0);
  await page.waitForTimeout(500);
  await expect(card).toHaveCount(1);
  expect((await (await api(request, project.apiKey, "GET", "/webhooks")).json()).data).toHaveLength(1);

  // Escape closes it too, and the focus goes back to the button that opened it.
  await card.getByTestId("delete-endpoint-button").click();
  await page.keyboard.press("Escape");
  await expect(card.getByRole("dialog")).toHaveCount(0);
  await expect(card.getByTestId("delete-endpoint-button")).toBeFocused();

  // Tab and Shift+Tab stay within the dialog (here the Rotate one).
  await card.getByTestId("rotate-secret-button").click();
  const rotate = card.getByRole("dialog");
  await expect(rotate.getByTestId("cancel-action")).toBeFocused();
  await page.keyboard.press("Tab");
  await expect(rotate.getByTestId("confirm-action")).toBeFocused();
  await page.keyboard.press("Tab");
  await expect(rotate.getByTestId("cancel-action")).toBeFocused();
  await page.keyboard.press("Shift+Tab");
  await expect(rotate.getByTestId("confirm-action")).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(card.getByTestId("rotate-secret-button")).toBeFocused();

  // Disabling asks as well, and says what happens to the events.
  await card.getByTestId("toggle-endpoint-button").click();
  await expect(card.getByRole("dialog")).toContainText("its events wait");
  await card.getByTestId("cancel-action").click();

  await card.getByTestId("delete-endpoint-button").click();
  await card.getByTestId("confirm-action").click();
  await expect(page.getByTestId("endpoint-row")).toHaveCount(0);
  expect((await (await api(request, project.apiKey, "GET", "/webhooks")).json()).data).toHaveLength(0);
  receiver.close();
});
