// Builds the shipped JavaScript: ESM and CommonJS, each with its .d.ts, into <out>/esm and
// <out>/cjs. `npm install <folder>` runs no build, so dist/ is committed.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = resolve(root, process.argv[2] ?? "dist");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
rmSync(out, { recursive: true, force: true });
const build = (dir, ...flags) =>
  execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.json"), "--outDir", join(out, dir), ...flags], {
    stdio: "inherit",
  });
build("esm");
build("cjs", "--module", "CommonJS", "--moduleResolution", "Node10");
// The package is "type": "module"; this marks the CommonJS half as such.
mkdirSync(join(out, "cjs"), { recursive: true });
writeFileSync(join(out, "cjs", "package.json"), '{\n  "type": "commonjs"\n}\n');
