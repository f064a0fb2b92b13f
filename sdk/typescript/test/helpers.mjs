// Shared by the suites: the server's address and keys come from sdk/test.sh.
import { createServer } from "node:net";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** An env var, or a skip (a failure under POSTHORN_REQUIRE_SERVER=1, as in test.sh). */
export function env(t, name) {
  const value = process.env[name];
  if (value) return value;
  if (process.env.POSTHORN_REQUIRE_SERVER === "1") throw new Error(`${name} is not set`);
  t.skip(`${name} is not set: run sdk/test.sh for the server tests`);
  return null;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(what, check, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await check();
    if (value) return value;
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The README's code block that contains `marker`. */
export function readmeBlock(lang, marker) {
  const text = readFileSync(join(ROOT, "README.md"), "utf8");
  const blocks = [...text.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]);
  const block = blocks.find((b) => b.includes(marker));
  if (!block) throw new Error(`no ${lang} block with ${marker} in the README`);
  return block;
}
