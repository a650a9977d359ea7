import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { loadDatabaseConfig } from "@mixdown/config";
import { readRunningStack, stateDir } from "./local-state.ts";

export class UsageError extends Error {}

/**
 * The database a one-off command works on: `DATABASE_URL` when set; else the one a running
 * `mixdown up` serves; else the local cluster of `mixdown up`, started just for this command.
 */
export async function withDatabase<T>(
  env: Record<string, string | undefined>,
  work: (databaseUrl: string) => Promise<T>,
): Promise<T> {
  if (env.DATABASE_URL) return work(loadDatabaseConfig(env).DATABASE_URL);
  const dir = stateDir(env);
  const running = readRunningStack(dir);
  if (running) return work(running.databaseUrl);
  const dataDir = await postgresDataDir(dir, true);
  if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
    throw new UsageError("No database: set DATABASE_URL, or run `./mixdown.sh up` once to create the local one.");
  }
  const { startPostgres } = await import("@mixdown/devstack");
  const postgres = await startPostgres({ dataDir });
  try {
    return await work(postgres.url);
  } finally {
    await postgres.stop();
  }
}

/** `.mixdown/postgres`, unless we are root and the postgres user cannot reach it (a checkout in /root). */
export async function postgresDataDir(dir: string, quiet = false): Promise<string> {
  const { postgresCanUse } = await import("@mixdown/devstack");
  const preferred = path.join(dir, "postgres");
  if (await postgresCanUse(preferred)) return preferred;
  const fallback = path.join("/var/lib/mixdown", createHash("sha256").update(dir).digest("hex").slice(0, 12), "postgres");
  if (!quiet) console.log(`Note: the postgres user cannot reach ${dir}; keeping the database in ${fallback}.`);
  return fallback;
}
