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
  const dataDir = path.join(dir, "postgres");
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
