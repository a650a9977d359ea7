import { createReadStream, createWriteStream, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, rename, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { Readable, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import zlib from "node:zlib";
import tar from "tar-stream";
import { loadConfig } from "@mixdown/config";
import {
  applyMigrations,
  DatabaseRestore,
  DatabaseSnapshot,
  installedTables,
  resetDatabase,
  type SequenceState,
} from "@mixdown/db";
import { createQueues, JOB_KINDS } from "@mixdown/queue";
import { createStorage, LocalDiskStorage, ObjectNotFoundError, type ObjectStorage } from "@mixdown/storage";
import { postgresDataDir, UsageError } from "../database.ts";
import { backupUsage } from "../usage.ts";
import { readRunningStack, stateDir } from "../local-state.ts";

/** What an archive says about itself, its first entry. */
interface BackupManifest {
  format: typeof FORMAT;
  version: typeof FORMAT_VERSION;
  createdAt: string;
  /** The migrations the rows belong to, in order: a restore applies these, loads the rows, then the newer ones. */
  migrations: string[];
  /** In load order: parents before the tables naming them. */
  tables: string[];
  sequences: SequenceState[];
  storageDriver: "local" | "s3";
}

/** The archive's last entry: what it holds, checked on restore (an archive without it is truncated). */
interface BackupTotals {
  rows: Record<string, number>;
  objects: number;
  objectBytes: number;
}

const FORMAT = "mixdown-backup";
const FORMAT_VERSION = 1;
const MANIFEST_ENTRY = "mixdown-backup.json";
const TOTALS_ENTRY = "mixdown-backup-totals.json";
const TABLE_PREFIX = "database/";
const TABLE_SUFFIX = ".jsonl";
const OBJECT_PREFIX = "objects/";
/** The SIGNED_URL_SECRET local storage signs its download links with. */
const SECRET_ENTRY = "secrets/SIGNED_URL_SECRET";
/** Rows per INSERT on restore, and bytes at most per batch. */
const RESTORE_BATCH_ROWS = 500;
const RESTORE_BATCH_BYTES = 8 * 1024 * 1024;

/**
 * The install a backup reads or a restore writes: the one `DATABASE_URL` and the storage settings
 * name (Docker Compose, any deployment), else the local one of `mixdown up` under the state dir.
 */
interface Install {
  databaseUrl: string;
  storage: ObjectStorage;
  /** The SIGNED_URL_SECRET in use, if any. */
  secret: string | undefined;
  /** Stores the backed-up SIGNED_URL_SECRET where the service reads it (`up`'s state), or says what to do. */
  adoptSecret(secret: string): string;
  /** Empties the job queues: their entries belong to the replaced data (the reconciler queues restored running rows again). */
  clearQueues(): Promise<void>;
  close(): Promise<void>;
}

async function openInstall(
  env: Record<string, string | undefined>,
  purpose: "backup" | "restore",
  log: (line: string) => void,
): Promise<Install> {
  if (env.DATABASE_URL) {
    const config = loadConfig(env);
    const storage = createStorage(config);
    return {
      databaseUrl: config.DATABASE_URL,
      storage,
      secret: config.SIGNED_URL_SECRET,
      adoptSecret: (secret) =>
        secret === config.SIGNED_URL_SECRET
          ? "SIGNED_URL_SECRET is the backed-up one."
          : config.STORAGE_DRIVER === "local"
            ? `Set SIGNED_URL_SECRET to the backed-up one (tar -xOf FILE ${SECRET_ENTRY}) for download links signed before the backup to keep working.`
            : "SIGNED_URL_SECRET differs from the backed-up one; with S3 storage links are signed by S3 and nothing depends on it.",
      clearQueues: async () => {
        const queues = createQueues({ connection: config.REDIS_URL, prefix: config.QUEUE_PREFIX, attempts: 1 });
        try {
          for (const kind of JOB_KINDS) await queues.queue(kind).obliterate({ force: true });
        } finally {
          await queues.close();
        }
      },
      close: () => storage.close(),
    };
  }
  const dir = stateDir(env);
  const running = readRunningStack(dir);
  if (running && purpose === "restore") {
    throw new UsageError(`Mixdown is up here (pid ${running.pid}): stop it (Ctrl-C) before restoring into it.`);
  }
  let databaseUrl = running?.databaseUrl;
  let stopPostgres = async () => {};
  if (!databaseUrl) {
    const dataDir = await postgresDataDir(dir, true);
    if (purpose === "backup" && !existsSync(path.join(dataDir, "PG_VERSION"))) {
      throw new UsageError(`Nothing to back up: no database in ${dataDir} (set DATABASE_URL for another install).`);
    }
    log(`Starting the local PostgreSQL (${dataDir}) for this command…`);
    const { startPostgres } = await import("@mixdown/devstack");
    const postgres = await startPostgres({ dataDir });
    databaseUrl = postgres.url;
    stopPostgres = () => postgres.stop();
  }
  const secretFile = path.join(dir, "secret");
  const secret =
    env.SIGNED_URL_SECRET ?? (existsSync(secretFile) ? readFileSync(secretFile, "utf8").trim() || undefined : undefined);
  const storage = new LocalDiskStorage({
    rootDir: path.join(dir, "storage"),
    publicBaseUrl: "http://127.0.0.1",
    // Nothing here signs a link; the storage only wants one.
    signingSecret: secret ?? "no links are signed by a backup or a restore",
  });
  return {
    databaseUrl,
    storage,
    secret,
    adoptSecret: (backedUp) => {
      writeFileSync(secretFile, `${backedUp}\n`, { mode: 0o600 });
      return env.SIGNED_URL_SECRET && env.SIGNED_URL_SECRET !== backedUp
        ? `The backed-up SIGNED_URL_SECRET is in ${secretFile}; unset SIGNED_URL_SECRET for \`up\` to use it.`
        : `The backed-up SIGNED_URL_SECRET is in ${secretFile}.`;
    },
    // `up`'s redis-server keeps its queues here; it starts empty next time.
    clearQueues: async () => rmSync(path.join(dir, "redis"), { recursive: true, force: true }),
    close: stopPostgres,
  };
}

/** `mixdown backup FILE`: one consistent archive of a running or stopped install. */
export async function backupCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new UsageError(`Usage:\n${backupUsage}`);
  const file = positionals[0]!;
  const toStdout = file === "-";
  // With the archive on stdout, what we say goes to stderr.
  const log = (line: string) => (toStdout ? console.error(line) : console.log(line));
  const started = Date.now();
  const partial = toStdout ? undefined : `${path.resolve(file)}.partial`;
  const install = await openInstall(env, "backup", log);
  const spool = await mkdtemp(path.join(os.tmpdir(), "mixdown-backup-"));
  try {
    const out: Writable = toStdout ? process.stdout : createWriteStream(partial!, { mode: 0o600 });
    const pack = tar.pack();
    const compress = /\.(t?gz)$/i.test(file);
    const written = compress
      ? pipeline(pack, zlib.createGzip({ level: 1 }), out, { end: !toStdout })
      : pipeline(pack, out, { end: !toStdout });
    // A failed write (disk full) must stop the entries being added, not leave them waiting.
    const failed = written.then(
      () => new Promise<never>(() => {}),
      (error: unknown) => {
        throw error;
      },
    );
    const totals = await Promise.race([writeArchive(pack, install, spool, log), failed]);
    pack.finalize();
    await written;
    if (partial) await rename(partial, path.resolve(file));
    const rows = Object.values(totals.rows).reduce((a, b) => a + b, 0);
    log(
      `Backed up ${rows} rows of ${Object.keys(totals.rows).length} tables, ${totals.objects} stored files ` +
        `(${(totals.objectBytes / 1e6).toFixed(1)} MB)${install.secret ? " and the signing secret" : ""} ` +
        `to ${toStdout ? "stdout" : file} in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
    );
    return 0;
  } catch (error) {
    if (partial) rmSync(partial, { force: true });
    throw error;
  } finally {
    await rm(spool, { recursive: true, force: true });
    await install.close();
  }
}

async function writeArchive(pack: tar.Pack, install: Install, spool: string, log: (line: string) => void): Promise<BackupTotals> {
  const snapshot = await DatabaseSnapshot.open(install.databaseUrl);
  const totals: BackupTotals = { rows: {}, objects: 0, objectBytes: 0 };
  try {
    const manifest: BackupManifest = {
      format: FORMAT,
      version: FORMAT_VERSION,
      createdAt: new Date().toISOString(),
      migrations: snapshot.migrations,
      tables: snapshot.tables,
      sequences: snapshot.sequences,
      storageDriver: install.storage.driver,
    };
    await addBuffer(pack, MANIFEST_ENTRY, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    for (const table of snapshot.tables) {
      // A tar entry states its size first: the table goes to a file on disk, then into the archive.
      const file = path.join(spool, `${table}${TABLE_SUFFIX}`);
      const sink = createWriteStream(file);
      let rows = 0;
      for await (const batch of snapshot.rows(table)) {
        rows += batch.length;
        if (!sink.write(`${batch.join("\n")}\n`)) await new Promise((resolve) => sink.once("drain", resolve));
      }
      await new Promise<void>((resolve, reject) => sink.end((error?: Error | null) => (error ? reject(error) : resolve())));
      totals.rows[table] = rows;
      await addFile(pack, `${TABLE_PREFIX}${table}${TABLE_SUFFIX}`, file);
      await rm(file);
    }
  } finally {
    await snapshot.close();
  }
  if (install.secret) await addBuffer(pack, SECRET_ENTRY, Buffer.from(`${install.secret}\n`));
  // Listed after the snapshot: every file a row of it names was stored before that row was written.
  const objects: { key: string; bytes: number }[] = [];
  await install.storage.forEachObject("", (key, bytes) => void objects.push({ key, bytes }));
  let gone = 0;
  for (const { key, bytes } of objects) {
    let body: Readable;
    try {
      body = await install.storage.getStream(key);
    } catch (error) {
      // Deleted since the listing (a cancelled job's outputs): no row of the snapshot needs it.
      if (error instanceof ObjectNotFoundError) {
        gone++;
        continue;
      }
      throw error;
    }
    await addStream(pack, `${OBJECT_PREFIX}${key}`, bytes, body);
    totals.objects++;
    totals.objectBytes += bytes;
  }
  if (gone > 0) log(`${gone} stored files were deleted while the backup ran; they are not in it.`);
  await addBuffer(pack, TOTALS_ENTRY, Buffer.from(`${JSON.stringify(totals, null, 2)}\n`));
  return totals;
}

function addBuffer(pack: tar.Pack, name: string, content: Buffer): Promise<void> {
  return new Promise((resolve, reject) =>
    pack.entry({ name, mode: 0o600, mtime: new Date() }, content, (error) => (error ? reject(error) : resolve())),
  );
}

async function addFile(pack: tar.Pack, name: string, file: string): Promise<void> {
  const { size } = await stat(file);
  await addStream(pack, name, size, createReadStream(file));
}

/** One entry of `size` bytes from a stream; the pack's backpressure holds the source back. */
function addStream(pack: tar.Pack, name: string, size: number, body: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const entry = pack.entry({ name, size, mode: 0o600, mtime: new Date() }, (error) => (error ? reject(error) : resolve()));
    body.once("error", (error) => {
      entry.destroy(error);
      reject(error);
    });
    body.pipe(entry);
  });
}

/** `mixdown restore FILE [--force]`: an archive of `backup` into an empty (or, with --force, wiped) install. */
export async function restoreCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { force: { type: "boolean" } },
  });
  if (positionals.length !== 1) throw new UsageError(`Usage:\n${backupUsage}`);
  const file = positionals[0]!;
  if (file !== "-" && !existsSync(file)) throw new UsageError(`No such file: ${file}`);
  const log = (line: string) => console.log(line);
  const started = Date.now();
  const install = await openInstall(env, "restore", log);
  try {
    const filled = (await installedTables(install.databaseUrl)).filter((t) => t.hasRows).map((t) => t.name);
    const objects = await install.storage.list("");
    if ((filled.length > 0 || objects.length > 0) && !values.force) {
      throw new UsageError(
        [
          "This install is not empty:",
          filled.length > 0 ? `  rows in ${filled.join(", ")}` : undefined,
          objects.length > 0 ? `  ${objects.length} stored files` : undefined,
          "Restoring replaces all of it. Add --force to do that, or restore into an empty install.",
        ]
          .filter(Boolean)
          .join("\n"),
      );
    }
    const archive = await decompressed(file === "-" ? process.stdin : createReadStream(file));
    const extract = tar.extract();
    const reading = pipeline(archive, extract).catch((error: unknown) => extract.destroy(error as Error));
    const result = await restoreArchive(extract, install, objects.length, log);
    await reading;
    const newer = await applyMigrations(install.databaseUrl);
    const rows = Object.values(result.totals.rows).reduce((a, b) => a + b, 0);
    log(
      [
        `Restored ${rows} rows of ${Object.keys(result.totals.rows).length} tables and ${result.totals.objects} stored files ` +
          `(${(result.totals.objectBytes / 1e6).toFixed(1)} MB), backed up ${result.manifest.createdAt}, in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
        newer.applied.length > 0
          ? `Migrations newer than the backup applied after its rows: ${newer.applied.join(", ")}.`
          : `The backup is at this checkout's migration level (${result.manifest.migrations.length} migrations).`,
        result.secretNote,
        "Jobs that were running when the backup was made run again once the service is up.",
      ]
        .filter(Boolean)
        .join("\n"),
    );
    return 0;
  } finally {
    await install.close();
  }
}

/** The archive's bytes, gunzipped when they are gzip's (whatever the file is called). */
async function decompressed(input: Readable): Promise<Readable> {
  const chunks = input[Symbol.asyncIterator]();
  const first = await chunks.next();
  const head: Buffer = first.done ? Buffer.alloc(0) : (first.value as Buffer);
  const whole = Readable.from(
    (async function* () {
      if (head.length > 0) yield head;
      for (;;) {
        const next = await chunks.next();
        if (next.done) return;
        yield next.value as Buffer;
      }
    })(),
    { objectMode: false },
  );
  if (head[0] !== 0x1f || head[1] !== 0x8b) return whole;
  const gunzip = zlib.createGunzip();
  pipeline(whole, gunzip).catch((error: unknown) => gunzip.destroy(error as Error));
  return gunzip;
}

async function restoreArchive(
  extract: tar.Extract,
  install: Install,
  storedObjects: number,
  log: (line: string) => void,
): Promise<{ manifest: BackupManifest; totals: BackupTotals; secretNote?: string }> {
  let manifest: BackupManifest | undefined;
  let database: DatabaseRestore | undefined;
  let totals: BackupTotals | undefined;
  let secretNote: string | undefined;
  const restored: BackupTotals = { rows: {}, objects: 0, objectBytes: 0 };
  try {
    for await (const entry of extract) {
      const name = entry.header.name;
      if (!manifest) {
        if (name !== MANIFEST_ENTRY)
          throw new UsageError(`Not a Mixdown backup: its first entry is ${name}, not ${MANIFEST_ENTRY}.`);
        manifest = readManifest(await readAll(entry));
        // The database is brought to the dump's level: every table dropped, its migrations applied again.
        await resetDatabase(install.databaseUrl);
        await applyMigrations(install.databaseUrl, undefined, { upTo: manifest.migrations });
        if (storedObjects > 0) await install.storage.deletePrefix("");
        await install.clearQueues();
        database = await DatabaseRestore.begin(install.databaseUrl);
        log(`Restoring a backup of ${manifest.createdAt} (${manifest.migrations.length} migrations)…`);
      } else if (name.startsWith(TABLE_PREFIX) && name.endsWith(TABLE_SUFFIX)) {
        const table = name.slice(TABLE_PREFIX.length, -TABLE_SUFFIX.length);
        await loadTable(database!, table, entry);
        restored.rows[table] = database!.rowsLoaded(table);
      } else if (name === SECRET_ENTRY) {
        secretNote = install.adoptSecret((await readAll(entry)).toString("utf8").trim());
      } else if (name.startsWith(OBJECT_PREFIX)) {
        restored.objectBytes += await install.storage.putStream(name.slice(OBJECT_PREFIX.length), entry);
        restored.objects++;
      } else if (name === TOTALS_ENTRY) {
        totals = JSON.parse((await readAll(entry)).toString("utf8")) as BackupTotals;
      } else {
        throw new UsageError(`Unexpected entry in the backup: ${name}.`);
      }
    }
    if (!manifest) throw new UsageError("The backup is empty.");
    if (!totals) {
      throw new UsageError(
        "The backup ends before its last entry (a truncated file?): nothing of its database was kept. Restore a whole one with --force.",
      );
    }
    const short = Object.entries(totals.rows).filter(([table, rows]) => restored.rows[table] !== rows);
    if (short.length > 0 || restored.objects !== totals.objects) {
      throw new Error(
        `The backup's contents do not match its totals (${short.map(([t, n]) => `${t}: ${restored.rows[t] ?? 0} of ${n} rows`).join(", ")}` +
          `${restored.objects !== totals.objects ? `; ${restored.objects} of ${totals.objects} files` : ""}).`,
      );
    }
    await database!.setSequences(manifest.sequences);
    await database!.commit();
    return { manifest, totals, secretNote };
  } catch (error) {
    await database?.rollback();
    throw error;
  }
}

function readManifest(bytes: Buffer): BackupManifest {
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(bytes.toString("utf8")) as BackupManifest;
  } catch {
    throw new UsageError(`Not a Mixdown backup: ${MANIFEST_ENTRY} is not JSON.`);
  }
  if (manifest.format !== FORMAT) throw new UsageError(`Not a Mixdown backup: ${MANIFEST_ENTRY} says format ${manifest.format}.`);
  if (manifest.version !== FORMAT_VERSION) {
    throw new UsageError(`A backup of format version ${manifest.version}; this Mixdown reads version ${FORMAT_VERSION}.`);
  }
  return manifest;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A table's JSON lines, inserted a batch at a time as they stream in. */
async function loadTable(database: DatabaseRestore, table: string, entry: Readable): Promise<void> {
  let batch: string[] = [];
  let bytes = 0;
  for await (const line of readline.createInterface({ input: entry, crlfDelay: Infinity })) {
    if (line.length === 0) continue;
    batch.push(line);
    bytes += line.length;
    if (batch.length >= RESTORE_BATCH_ROWS || bytes >= RESTORE_BATCH_BYTES) {
      await database.insert(table, batch);
      batch = [];
      bytes = 0;
    }
  }
  await database.insert(table, batch);
}
