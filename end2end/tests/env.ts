export const PORT = Number(process.env.E2E_PORT || 3100);
export const BASE_URL = `http://127.0.0.1:${PORT}`;

/** The suite's own database, on the same server as DATABASE_URL. */
export function e2eDatabaseUrl(): string {
  const admin = process.env.POSTHORN_TEST_DATABASE_URL || process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
  const u = new URL(admin);
  u.pathname = "/posthorn_e2e";
  return u.toString();
}
