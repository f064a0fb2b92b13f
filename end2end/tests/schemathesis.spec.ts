import { test, expect } from "@playwright/test";
import { execFileSync, spawn } from "node:child_process";
import * as path from "node:path";
import { e2eDatabaseUrl, PORT } from "./env";

// Schemathesis with every check, over several seeds, against a server of its own: its
// own database, and plan limits high enough that the thousands of requests it sends
// (many on purpose without a key, which SPEC.md counts per address) never meet a 429.
// The suite's server keeps the real limits the other tests rely on.
const SEEDS = (process.env.POSTHORN_SCHEMATHESIS_SEEDS || "20261130,1,2").split(",");

test("schemathesis with all checks finds nothing, over several seeds", async () => {
  test.setTimeout(600_000);
  const bin = process.env.POSTHORN_BIN!;
  const psql = process.env.POSTHORN_PSQL || "psql";
  const url = new URL(e2eDatabaseUrl());
  const db = `${url.pathname.slice(1)}_schema`;
  const admin = new URL(url.toString());
  admin.pathname = "/postgres";
  execFileSync(psql, [admin.toString(), "-qc", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]);
  execFileSync(psql, [admin.toString(), "-qc", `CREATE DATABASE ${db}`]);
  url.pathname = `/${db}`;
  const port = PORT + 7;
  const env = {
    ...process.env,
    DATABASE_URL: url.toString(),
    LEPTOS_SITE_ADDR: `127.0.0.1:${port}`,
    POSTHORN_PUBLIC_URL: `http://127.0.0.1:${port}`,
    POSTHORN_PLAN_LIMITS: "trial=1000000,business=1000000",
    POSTHORN_ALLOW_PRIVATE_TARGETS: "true",
  };
  execFileSync(bin, ["migrate"], { env, stdio: "ignore" });
  const created = execFileSync(bin, [
    "create-project", "--name", "Schemathesis", "--owner-email", "schema@example.com",
    "--owner-password", "password-123", "--plan", "business",
  ], { env, encoding: "utf8" });
  const { api_key } = JSON.parse(created.trim());
  const { operator_key } = JSON.parse(execFileSync(bin, ["create-operator-key", "--name", "schemathesis"], { env, encoding: "utf8" }).trim());
  const server = spawn(bin, ["serve"], { env, stdio: "ignore" });
  try {
    const documents = [
      [`http://127.0.0.1:${port}/public/v1/openapi.json`, api_key],
      [`http://127.0.0.1:${port}/operator/v1/openapi.json`, operator_key],
    ];
    await expect.poll(async () => (await fetch(documents[0][0]).catch(() => null))?.status, { timeout: 30_000 }).toBe(200);
    // Recoveries of the endpoints it makes (to addresses that fail at once) run for a
    // second or two each; at the default of 3 running replays a project, schemathesis'
    // rapid calls would meet `limit_reached`, which it counts as valid data refused;
    // so would erasures, at 10 running a project.
    const projects = await (await fetch(`http://127.0.0.1:${port}/operator/v1/projects`, { headers: { Authorization: `Bearer ${operator_key}` } })).json();
    for (const p of projects.data) {
      const r = await fetch(`http://127.0.0.1:${port}/operator/v1/projects/${p.id}`, {
        method: "PATCH", headers: { Authorization: `Bearer ${operator_key}`, "content-type": "application/json" },
        body: JSON.stringify({ limits: { concurrent_replays: 20, concurrent_erasures: 100 } }),
      });
      expect(r.status).toBe(200);
    }
    const python = process.env.POSTHORN_PYTHON || "python3";
    const st = path.join(path.dirname(python), "schemathesis");
    for (const [documentUrl, key] of documents) for (const seed of SEEDS) {
      let out = "";
      try {
        out = execFileSync(st, [
          "run", documentUrl, "-H", `Authorization: Bearer ${key}`,
          "--checks", "all", "-n", "25", "--no-color", "--seed", seed,
        ], { encoding: "utf8", timeout: 170_000 });
      } catch (e: any) {
        throw new Error(`schemathesis (${documentUrl}, seed ${seed}) failed:\n${e.stdout}\n${e.stderr}`);
      }
      expect(out).toMatch(/\d+ generated, \d+ passed/);
      expect(out, `${documentUrl} seed ${seed}`).not.toMatch(/failure/);
    }
  } finally {
    server.kill();
  }
});
