import { test, expect } from "@playwright/test";
import { execFileSync } from "node:child_process";
import { api, createProject } from "./helpers";
import { BASE_URL } from "./env";

test("a real HTTP client honouring Retry-After gets 100 events accepted on a trial key", async ({ request }) => {
  test.setTimeout(330_000);
  const p = createProject("Trial client", "trial");
  const out = execFileSync(process.env.POSTHORN_PYTHON || "python3", ["clients/post_events.py", BASE_URL, p.apiKey, "100"], {
    encoding: "utf8", timeout: 320_000,
  });
  const summary = JSON.parse(out.trim().split("\n").pop()!);
  expect(summary.accepted).toBe(100);
  expect(summary.early).toBe(0);
  expect(summary.rate_limited).toBeGreaterThan(0);
  // Wait out the minute, then count what the API holds: exactly 100, no duplicates.
  let events: unknown[] = [];
  await expect.poll(async () => {
    const res = await api(request, p.apiKey, "GET", "/events?limit=200");
    if (res.status() !== 200) return -1;
    events = (await res.json()).data;
    return events.length;
  }, { timeout: 70_000, intervals: [5_000] }).toBe(100);
});
