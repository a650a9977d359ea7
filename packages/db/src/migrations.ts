import { createHash, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

/** `prisma/migrations` of this checkout. */
export const defaultMigrationsDir = fileURLToPath(new URL("../../../prisma/migrations", import.meta.url));

/**
 * The key `prisma migrate deploy` takes its advisory lock on, so this applier and the Prisma CLI
 * never run migrations at the same time against one database.
 */
const PRISMA_MIGRATE_LOCK_KEY = 72707369;

// The table exactly as Prisma's schema engine creates it, so either tool can take over from the other.
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface MigrationFile {
  name: string;
  sql: string;
  /** sha256 hex of migration.sql, as Prisma records it. */
  checksum: string;
}

export interface MigrationResult {
  /** Migrations this call applied, in order. */
  applied: string[];
  /** Migrations that were already recorded as applied. */
  alreadyApplied: string[];
  /** Recorded in the database but absent from the migrations folder (a newer release ran here). */
  unknown: string[];
}

export class MigrationError extends Error {}

export interface ApplyMigrationsOptions {
  /**
   * Apply only these migrations, which must be the first ones of the folder in its order (a
   * restore brings an empty database to the level its dump was made at, then loads the rows).
   */
  upTo?: readonly string[];
}

function migrationsUpTo(all: MigrationFile[], names: readonly string[]): MigrationFile[] {
  const wanted = new Set(names);
  const unknown = names.filter((name) => !all.some((m) => m.name === name));
  if (unknown.length > 0) {
    throw new MigrationError(
      `Migrations ${unknown.join(", ")} are not in this checkout: the data comes from a newer Mixdown; upgrade this one first.`,
    );
  }
  const chosen = all.slice(0, wanted.size);
  const gap = chosen.find((m) => !wanted.has(m.name));
  if (gap) {
    throw new MigrationError(
      `The data was migrated without ${gap.name}, which comes before its last migration here; it cannot be brought to this checkout's level.`,
    );
  }
  return chosen;
}

/** Reads `<dir>/<name>/migration.sql` for every migration folder, ordered by name as Prisma does. */
export async function readMigrations(migrationsDir: string = defaultMigrationsDir): Promise<MigrationFile[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory() && existsSync(path.join(migrationsDir, e.name, "migration.sql")))
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const bytes = await readFile(path.join(migrationsDir, name, "migration.sql"));
      return { name, sql: bytes.toString("utf8"), checksum: createHash("sha256").update(bytes).digest("hex") };
    }),
  );
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/**
 * Applies the committed migrations that the database has not seen, without the Prisma CLI (whose
 * schema engine needs the network). Each migration runs in its own transaction and is recorded in
 * `_prisma_migrations` the way `prisma migrate deploy` records it. Idempotent; concurrent callers
 * serialise on Prisma's advisory lock. Refuses to run when an applied migration's file changed or
 * a migration is recorded as started but never finished.
 */
export async function applyMigrations(
  databaseUrl: string,
  migrationsDir: string = defaultMigrationsDir,
  options: ApplyMigrationsOptions = {},
): Promise<MigrationResult> {
  const all = await readMigrations(migrationsDir);
  const migrations = options.upTo ? migrationsUpTo(all, options.upTo) : all;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_MIGRATE_LOCK_KEY]);
    try {
      await client.query(CREATE_MIGRATIONS_TABLE);
      const { rows } = await client.query<AppliedRow>(
        `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ORDER BY started_at`,
      );
      const live = rows.filter((r) => r.rolled_back_at === null);
      const failed = live.filter((r) => r.finished_at === null);
      if (failed.length > 0) {
        throw new MigrationError(
          `Migration ${failed.map((r) => r.migration_name).join(", ")} started but did not finish; ` +
            `resolve it (fix the database, then mark it rolled back or applied) before migrating again.`,
        );
      }
      const appliedByName = new Map(live.map((r) => [r.migration_name, r]));
      const onDisk = new Set(migrations.map((m) => m.name));
      const result: MigrationResult = {
        applied: [],
        alreadyApplied: [],
        unknown: [...appliedByName.keys()].filter((name) => !onDisk.has(name)),
      };
      for (const migration of migrations) {
        const recorded = appliedByName.get(migration.name);
        if (recorded) {
          if (recorded.checksum !== migration.checksum) {
            throw new MigrationError(
              `Migration ${migration.name} was modified after it was applied ` +
                `(recorded checksum ${recorded.checksum}, file ${migration.checksum}); add a new migration instead.`,
            );
          }
          result.alreadyApplied.push(migration.name);
          continue;
        }
        await applyOne(client, migration);
        result.applied.push(migration.name);
      }
      return result;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_MIGRATE_LOCK_KEY]);
    }
  } finally {
    await client.end();
  }
}

async function applyOne(client: pg.Client, migration: MigrationFile): Promise<void> {
  const startedAt = new Date();
  await client.query("BEGIN");
  try {
    // No parameters: the simple query protocol runs a multi-statement script.
    await client.query(migration.sql);
    await client.query(
      `INSERT INTO "_prisma_migrations"
         (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count)
       VALUES ($1, $2, now(), $3, NULL, NULL, $4, 1)`,
      [randomUUID(), migration.checksum, migration.name, startedAt],
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw new MigrationError(`Migration ${migration.name} failed and was rolled back: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
