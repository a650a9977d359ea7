import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { appendFile, cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import {
  applyMigrations,
  createJobTables,
  createPrismaClient,
  defaultMigrationsDir,
  MigrationError,
  readMigrations,
  SeparationJobRepository,
} from "../src/index.ts";
import { startTestCluster, type TestCluster } from "./postgres.ts";

let cluster: TestCluster;
const scratch: string[] = [];
before(async () => {
  cluster = await startTestCluster();
});
after(async () => {
  await cluster.stop();
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A copy of the committed migrations before `name`: a database as the release before it left it. */
async function migrationsBefore(name: string): Promise<string> {
  const dir = await copyOfMigrations();
  const names = (await readMigrations(dir)).map((m) => m.name);
  assert.ok(names.includes(name), `${name} is a committed migration`);
  for (const later of names.filter((n) => n >= name)) await rm(path.join(dir, later), { recursive: true });
  return dir;
}

/** A copy of the committed migrations that a test may change. */
async function copyOfMigrations(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mixdown-migrations-"));
  scratch.push(dir);
  await cp(defaultMigrationsDir, dir, { recursive: true });
  return dir;
}

describe("applyMigrations", () => {
  test("applies the committed migrations to an empty database and records them as prisma migrate deploy does", async () => {
    const url = await cluster.freshDatabase();
    const migrations = await readMigrations();
    assert.ok(migrations.length >= 1);

    const result = await applyMigrations(url);
    assert.deepEqual(
      result.applied,
      migrations.map((m) => m.name),
    );
    assert.deepEqual(result.alreadyApplied, []);

    const rows = await query<Record<string, unknown>>(url, `SELECT * FROM "_prisma_migrations" ORDER BY migration_name`);
    assert.equal(rows.length, migrations.length);
    for (const [i, row] of rows.entries()) {
      const file = await readFile(path.join(defaultMigrationsDir, migrations[i]!.name, "migration.sql"));
      assert.equal(row.migration_name, migrations[i]!.name);
      assert.equal(row.checksum, createHash("sha256").update(file).digest("hex"));
      assert.match(String(row.id), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(row.finished_at instanceof Date);
      assert.ok(row.started_at instanceof Date);
      assert.ok((row.finished_at as Date) >= (row.started_at as Date));
      assert.equal(row.logs, null);
      assert.equal(row.rolled_back_at, null);
      assert.equal(row.applied_steps_count, 1);
    }

    // Column types as Prisma's schema engine creates them.
    const columns = await query<{ column_name: string; data_type: string; is_nullable: string }>(
      url,
      `SELECT column_name, data_type, is_nullable FROM information_schema.columns
        WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
    );
    assert.deepEqual(
      columns.map((c) => `${c.column_name} ${c.data_type} ${c.is_nullable}`),
      [
        "id character varying NO",
        "checksum character varying NO",
        "finished_at timestamp with time zone YES",
        "migration_name character varying NO",
        "logs text YES",
        "rolled_back_at timestamp with time zone YES",
        "started_at timestamp with time zone NO",
        "applied_steps_count integer NO",
      ],
    );
    const tables = await query<{ tablename: string }>(url, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`);
    for (const table of ["Caller", "ApiKey", "SeparationJob", "VoiceModel", "VoiceConversionJob", "VoiceBlendJob", "TtsJob"]) {
      assert.ok(
        tables.some((t) => t.tablename === table),
        `table ${table} exists`,
      );
    }
  });

  test("running it again changes nothing", async () => {
    const url = await cluster.freshDatabase();
    await applyMigrations(url);
    const before = await query(url, `SELECT * FROM "_prisma_migrations"`);
    const second = await applyMigrations(url);
    assert.deepEqual(second.applied, []);
    assert.equal(second.alreadyApplied.length, before.length);
    assert.deepEqual(await query(url, `SELECT * FROM "_prisma_migrations"`), before);
  });

  test("concurrent starters apply each migration exactly once", async () => {
    const url = await cluster.freshDatabase();
    const results = await Promise.all(Array.from({ length: 5 }, () => applyMigrations(url)));
    const migrations = await readMigrations();
    assert.equal(results.filter((r) => r.applied.length > 0).length, 1);
    assert.deepEqual(
      results.flatMap((r) => r.applied),
      migrations.map((m) => m.name),
    );
    const rows = await query(url, `SELECT * FROM "_prisma_migrations"`);
    assert.equal(rows.length, migrations.length);
  });

  test("applies a migration added later, after the ones already applied", async () => {
    const url = await cluster.freshDatabase();
    const dir = await copyOfMigrations();
    await applyMigrations(url, dir);
    await mkdir(path.join(dir, "29991231000000_add_note"));
    await writeFile(path.join(dir, "29991231000000_add_note", "migration.sql"), `ALTER TABLE "Caller" ADD COLUMN "note" TEXT;\n`);
    const result = await applyMigrations(url, dir);
    assert.deepEqual(result.applied, ["29991231000000_add_note"]);
    const columns = await query<{ column_name: string }>(
      url,
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'Caller'`,
    );
    assert.ok(columns.some((c) => c.column_name === "note"));
  });

  test("refuses to run when an applied migration's file was changed", async () => {
    const url = await cluster.freshDatabase();
    const dir = await copyOfMigrations();
    await applyMigrations(url, dir);
    const [first] = await readMigrations(dir);
    await appendFile(path.join(dir, first!.name, "migration.sql"), "\n-- edited afterwards\n");
    await assert.rejects(applyMigrations(url, dir), (error: Error) => {
      assert.ok(error instanceof MigrationError);
      assert.match(error.message, new RegExp(`${first!.name} was modified after it was applied`));
      return true;
    });
  });

  test("rolls back a failing migration entirely and records nothing for it", async () => {
    const url = await cluster.freshDatabase();
    const dir = await copyOfMigrations();
    await mkdir(path.join(dir, "29991231000000_broken"));
    await writeFile(
      path.join(dir, "29991231000000_broken", "migration.sql"),
      `CREATE TABLE "Half" ("id" INTEGER);\nSELECT * FROM "NoSuchTable";\n`,
    );
    await assert.rejects(applyMigrations(url, dir), /29991231000000_broken failed and was rolled back/);
    const half = await query(url, `SELECT 1 FROM pg_tables WHERE tablename = 'Half'`);
    assert.equal(half.length, 0);
    const recorded = await query<{ migration_name: string }>(url, `SELECT migration_name FROM "_prisma_migrations"`);
    assert.ok(!recorded.some((r) => r.migration_name === "29991231000000_broken"));
    // The ones before it stay applied.
    assert.equal(recorded.length, (await readMigrations()).length);
  });

  test("refuses to run while a migration is recorded as started but unfinished", async () => {
    const url = await cluster.freshDatabase();
    await applyMigrations(url);
    await query(url, `UPDATE "_prisma_migrations" SET finished_at = NULL`);
    await assert.rejects(applyMigrations(url), /started but did not finish/);
  });

  test("ignores rows Prisma marked rolled back and reports migrations it does not know", async () => {
    const url = await cluster.freshDatabase();
    await applyMigrations(url);
    await query(
      url,
      `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
       VALUES ('00000000-0000-4000-8000-000000000000', 'x', now(), '30000101000000_from_a_newer_release', now(), 1)`,
    );
    // A failed attempt that was later marked rolled back (`prisma migrate resolve --rolled-back`).
    await query(
      url,
      `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, rolled_back_at, started_at, applied_steps_count)
       VALUES ('00000000-0000-4000-8000-000000000001', 'y', NULL, '20261122000000_init', now(), now(), 0)`,
    );
    const result = await applyMigrations(url);
    assert.deepEqual(result.applied, []);
    assert.deepEqual(result.unknown, ["30000101000000_from_a_newer_release"]);
  });
});

describe("upgrades keep the rows a release before wrote", () => {
  test("a separation's comma-joined model becomes its list of models, and none named (null) the empty list", async () => {
    const url = await cluster.freshDatabase();
    await applyMigrations(url, await migrationsBefore("20261127120000_separation_model_list"));
    await query(
      url,
      `INSERT INTO "Caller" (id, name) VALUES (1, 'before');
       INSERT INTO "SeparationJob" (id, "callerId", kind, "inputKey", "inputFormat", model, ensemble) VALUES
         (1, 1, 'vocal_separation', 'uploads/a.wav', 'wav', 'vocals,stems', 'max_mag'),
         (2, 1, 'stem_split', 'uploads/b.wav', 'wav', 'six', NULL),
         (3, 1, 'vocal_separation', 'uploads/c.wav', 'wav', NULL, NULL)`,
    );
    // The first it applies; later releases' migrations follow it.
    assert.deepEqual((await applyMigrations(url)).applied[0], "20261127120000_separation_model_list");

    const rows = await query<{ id: number; models: string[] }>(url, `SELECT id, models FROM "SeparationJob" ORDER BY id`);
    assert.deepEqual(
      rows.map((r) => [r.id, r.models]),
      [
        [1, ["vocals", "stems"]],
        [2, ["six"]],
        [3, []],
      ],
    );
    const columns = await query<{ column_name: string }>(
      url,
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'SeparationJob'`,
    );
    assert.ok(!columns.some((c) => c.column_name === "model"), "the comma-joined column is gone");
    // and Prisma reads them as the repositories hand them on
    const prisma = createPrismaClient(url);
    try {
      const separations = new SeparationJobRepository(prisma);
      assert.deepEqual((await separations.findById(1))?.models, ["vocals", "stems"]);
      assert.equal((await separations.findById(1))?.ensemble, "max_mag");
      assert.deepEqual((await separations.findById(3))?.models, []);
    } finally {
      await prisma.$disconnect();
    }
  });

  test("a job created before usage was counted counts as a job of 0 seconds when it succeeds; keys have no quota", async () => {
    const url = await cluster.freshDatabase();
    await applyMigrations(url, await migrationsBefore("20261129030000_usage"));
    await query(
      url,
      `INSERT INTO "Caller" (id, name) VALUES (1, 'before');
       INSERT INTO "ApiKey" (id, "callerId", name, "keyHash", "keyPrefix") VALUES (1, 1, 'old', 'hash', 'mxd_old');
       INSERT INTO "SeparationJob" (id, "callerId", "apiKeyId", kind, "inputKey", "inputFormat") VALUES
         (1, 1, 1, 'vocal_separation', 'uploads/a.wav', 'wav')`,
    );
    assert.ok((await applyMigrations(url)).applied.includes("20261129030000_usage"));
    const prisma = createPrismaClient(url);
    try {
      const outputs = { vocalKey: null, lossyVocalKey: null, backingKey: null, stems: [], lossyStems: [], models: ["vocals"] };
      assert.equal(await createJobTables(prisma).separation.complete(1, outputs), true);
      const usage = await prisma.usageRecord.findMany();
      assert.deepEqual(
        usage.map((u) => [u.jobKind, u.rowId, u.callerId, u.apiKeyId, u.seconds]),
        [["vocal_separation", 1, 1, 1, 0]],
      );
      assert.equal((await prisma.apiKey.findUniqueOrThrow({ where: { id: 1 } })).monthlyQuotaMinutes, null);
    } finally {
      await prisma.$disconnect();
    }
  });
});
