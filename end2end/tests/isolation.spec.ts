import { test, expect } from "@playwright/test";
import { createProject, login, OWNER } from "./helpers";

test("an owner of another project gets 'not found' for Demo's data, in the page and from the server functions", async ({ page, browser }) => {
  // Demo's owner reads one delivery's id and project.
  await login(page, OWNER);
  await page.goto("/developers/deliveries");
  const row = page.getByTestId("delivery-row").first();
  await expect(row).toBeVisible();
  const deliveryId = await row.getAttribute("data-id");
  const requestId = await row.getAttribute("data-request-id");
  const demoProject = await page.evaluate(async () => {
    const r = await fetch("/api/get_viewer", { method: "POST" });
    return (await r.json()).current.id as number;
  });

  const other = createProject("Other");
  const ctx = await browser.newContext();
  const page2 = await ctx.newPage();
  await login(page2, { email: other.email, password: other.password });
  await expect(page2.getByTestId("project-name")).toHaveText("Other");

  // Through the page: Demo's request id finds nothing.
  await page2.goto(`/developers/deliveries?q=${requestId}`);
  await expect(page2.getByText("No deliveries match this view.")).toBeVisible();
  await expect(page2.getByTestId("delivery-row")).toHaveCount(0);

  // Through the server functions themselves.
  const call = (name: string, form: Record<string, string>) =>
    page2.evaluate(async ([name, form]) => {
      const r = await fetch(`/api/${name}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(form as Record<string, string>).toString(),
      });
      return { status: r.status, text: await r.text() };
    }, [name, form] as const);
  for (const [name, form] of [
    ["get_delivery_detail", { project_id: String(demoProject), id: String(deliveryId) }],
    ["retry_delivery", { project_id: String(demoProject), id: String(deliveryId) }],
    ["switch_project", { project_id: String(demoProject) }],
  ] as const) {
    const r = await call(name, form);
    expect(r.status, name).toBe(404);
    expect(r.text, name).toContain("not found");
    expect(r.text, name).not.toContain(requestId!);
  }
  await ctx.close();
});
