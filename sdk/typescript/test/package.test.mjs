// The package as users get it: dist/ is what the sources build to, and a plain
// `npm install <folder>` (no build step) gives working ESM, CommonJS and types.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { join, relative } from "node:path";
import { ROOT } from "./helpers.mjs";

const files = (dir) =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath ?? e.path, e.name)))
    .sort();

test("dist/ is exactly what src/ builds to", (t) => {
  const out = mkdtempSync(join(ROOT, "test", ".tmp-build-"));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  execFileSync(process.execPath, [join(ROOT, "scripts", "build.mjs"), out], { stdio: "inherit" });
  const dist = join(ROOT, "dist");
  assert.deepEqual(files(out), files(dist));
  for (const f of files(out)) {
    assert.equal(readFileSync(join(dist, f), "utf8"), readFileSync(join(out, f), "utf8"), `dist/${f} is stale: npm run build`);
  }
});

test("npm install <folder> gives ESM, CommonJS and types without a build step", (t) => {
  const app = mkdtempSync(join(ROOT, "test", ".tmp-app-"));
  t.after(() => rmSync(app, { recursive: true, force: true }));
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "receiver-app", private: true }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--offline", ROOT], { cwd: app, stdio: "pipe" });
  const pkg = join(app, "node_modules", "@posthorn", "sdk");
  assert.ok(existsSync(join(pkg, "dist", "esm", "index.d.ts")));
  writeFileSync(join(app, "a.cjs"), 'const p = require("@posthorn/sdk"); console.log(typeof p.verify, typeof p.Client, typeof p.WebhookVerificationError, typeof p.Operator);');
  writeFileSync(join(app, "b.mjs"), 'import { verify, Client, WebhookVerificationError, Operator } from "@posthorn/sdk"; console.log(typeof verify, typeof Client, typeof WebhookVerificationError, typeof Operator);');
  for (const f of ["a.cjs", "b.mjs"]) {
    assert.equal(execFileSync(process.execPath, [f], { cwd: app, encoding: "utf8" }).trim(), "function function function function");
  }
  // Types resolve for both module systems (checked by the compiler of this package).
  writeFileSync(join(app, "c.ts"), 'import { verify, Operator, type Webhook, type Project } from "@posthorn/sdk";\nconst w: Webhook | null = null;\nconst e: unknown = verify("{}", {}, "whsec_AAAA");\nconst p: Promise<Project | null> = new Operator("pho_x").projects.find("uid");\nexport { w, e, p };\n');
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  for (const mod of ["NodeNext", "CommonJS"]) {
    const res = mod === "NodeNext" ? ["--module", "NodeNext", "--moduleResolution", "NodeNext"] : ["--module", "CommonJS", "--moduleResolution", "Node10"];
    execFileSync(process.execPath, [tsc, "--noEmit", "--strict", "--types", "node", "--typeRoots", join(ROOT, "node_modules", "@types"), ...res, "c.ts"], { cwd: app, stdio: "inherit" });
  }
});
