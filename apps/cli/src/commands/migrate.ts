import { applyMigrations } from "@mixdown/db";
import { withDatabase } from "../database.ts";

/** `pnpm mixdown migrate`: applies the committed SQL migrations (no Prisma CLI, no network). */
export async function migrateCommand(env: Record<string, string | undefined>): Promise<number> {
  const result = await withDatabase(env, (url) => applyMigrations(url));
  for (const name of result.applied) console.log(`applied ${name}`);
  for (const name of result.unknown)
    console.log(`note: the database has ${name}, which this checkout does not know (a newer release?)`);
  console.log(
    result.applied.length === 0
      ? `Database is up to date (${result.alreadyApplied.length} migrations).`
      : `Applied ${result.applied.length} migration(s); ${result.alreadyApplied.length} were already applied.`,
  );
  return 0;
}
