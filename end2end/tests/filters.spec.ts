import { test, expect } from "@playwright/test";
import { api, webhooksPageOfNewProject } from "./helpers";

async function send(request: any, key: string, data: unknown) {
  const res = await api(request, key, "POST", "/events", { event: "payment.succeeded", data });
  expect(res.status()).toBe(202);
  return res.json();
}

test("an endpoint's filter is tried on recent events, refused with its position, saved, and explains what it kept out", async ({ page, request }) => {
  const { receiver, project } = await webhooksPageOfNewProject(page, "Filters");
  const created = await api(request, project.apiKey, "POST", "/webhooks", { url: receiver.url, events: ["payment.succeeded"] });
  expect(created.status()).toBe(201);
  const hook = await created.json();
  for (const amount of [500, 1500, 3000]) await send(request, project.apiKey, { amount, region: "eu" });
  await page.reload();
  const card = page.getByTestId("endpoint-row");
  await expect(card).toHaveCount(1);
  await expect(card.getByTestId("endpoint-filter")).toHaveCount(0);

  // A filter that does not parse: the page comes back with where, the text kept.
  await card.getByTestId("filter-toggle").click();
  await card.getByTestId("filter-input").fill("data.amount >");
  await card.getByTestId("save-filter-button").click();
  await expect(card.getByTestId("filter-error")).toContainText("at 1:14");
  await expect(card.getByTestId("filter-input")).toHaveValue("data.amount >");
  // In words; the parser's own message only under "Details".
  await expect(card.getByTestId("filter-error").locator("p")).toContainText("the filter stops before it is complete");
  await expect(card.getByTestId("filter-error").locator("p")).not.toContainText("mismatched input");
  await card.getByTestId("filter-error").getByText("Details").click();
  await expect(card.getByTestId("filter-error").locator("details code")).toContainText("mismatched input '<EOF>'");
  // A field of `event` (a string) fails on every event: refused when saved, with what to write.
  await card.getByTestId("filter-input").fill("event.type == 'payment.succeeded'");
  await card.getByTestId("save-filter-button").click();
  await expect(card.getByTestId("filter-error")).toContainText('write `event == "payment.succeeded"`');

  // Tried on the recent events: what it would send and keep out, nothing saved, and no
  // page load (the page's own state survives the try).
  await card.getByTestId("filter-input").fill("data.amount > 1000");
  await page.evaluate(() => ((window as any).__samePage = true));
  await card.getByTestId("try-filter-button").click();
  const tried = card.getByTestId("filter-try-result");
  await expect(tried).toContainText("it would send 2 and keep out 1");
  expect(await page.evaluate(() => (window as any).__samePage)).toBe(true);
  await expect(tried.getByTestId("filter-try-row")).toHaveCount(3);
  await expect(tried.getByTestId("filter-try-row").filter({ hasText: "the filter was false" })).toHaveCount(1);
  expect((await (await api(request, project.apiKey, "GET", `/webhooks/${hook.id}`)).json()).filter).toBeNull();
  await page.screenshot({ path: "../docs/screenshots/endpoint-filter-try.png" });

  // Saved: shown on the card and through the API.
  await card.getByTestId("save-filter-button").click();
  await expect(card.getByTestId("endpoint-filter")).toContainText("data.amount > 1000");
  await expect(card.getByTestId("filter-error")).toHaveCount(0);
  expect((await (await api(request, project.apiKey, "GET", `/webhooks/${hook.id}`)).json()).filter).toBe("data.amount > 1000");

  // An event it keeps out makes no attempt; the card says which and why.
  const small = await send(request, project.apiKey, { amount: 10, region: "eu" });
  expect(small.deliveries).toBe(0);
  await page.reload();
  await expect(card.getByTestId("filtered-out-toggle")).toHaveText("1 recent event kept out by the filter");
  await card.getByTestId("filtered-out-toggle").click();
  const row = card.getByTestId("filtered-out-row");
  await expect(row).toContainText(small.id);
  await expect(row).toContainText("the filter was false");

  // Hostile text in a filter is shown as text.
  await card.getByTestId("filter-toggle").click();
  await card.getByTestId("filter-input").fill('data.region == "<img src=x onerror=alert(1)>"');
  await card.getByTestId("save-filter-button").click();
  await expect(card.getByTestId("endpoint-filter")).toContainText("<img src=x onerror=alert(1)>");
  await expect(card.locator("img")).toHaveCount(0);
  await page.screenshot({ path: "../docs/screenshots/endpoint-filter.png" });
  receiver.close();
});
