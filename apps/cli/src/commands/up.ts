import { spawn } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig, publicBaseUrl } from "@mixdown/config";
import { ApiKeyRepository, applyMigrations, createPrismaClient, DashboardSignInRepository } from "@mixdown/db";
import { modelProcessEnv } from "@mixdown/separation/allocator";
import {
  ensureDatabase,
  findRedisServer,
  freePort,
  launchPostgresServer,
  launchRedisServer,
  postgresServerUrl,
  preparePostgres,
  RedisNotInstalledError,
  superviseChild,
} from "@mixdown/devstack";
import { postgresDataDir, UsageError } from "../database.ts";
import { configuredModels, pullConfiguredModels, pullContext } from "./models.ts";
import { type ChildFailure, type ChildSpec, Supervisor } from "../supervisor.ts";
import { runningFromPidFile, stopLeftovers, UP_PID_FILE, writePidFile } from "../leftovers.ts";
import { persistentSecret, readRunningStack, removeStackInfo, repoRoot, stateDir, writeStackInfo } from "../local-state.ts";

const LOCAL_CALLER = "local";
/** Lines of a failing child's log shown on the terminal. */
const FAILURE_TAIL = 15;

const API_ENTRY = "apps/api/src/main.ts";
/** The local cluster's superuser password (it listens on 127.0.0.1 only), as `startPostgres` sets it. */
const POSTGRES_PASSWORD = "mixdown";

/**
 * The program `up` runs as the worker. Only tests change it (to a worker that crashes on purpose,
 * `MIXDOWN_UP_TEST_WORKER_ENTRY`); it is not a setting for people.
 */
function workerEntry(env: Record<string, string | undefined>): string {
  return env.MIXDOWN_UP_TEST_WORKER_ENTRY ?? "apps/worker/src/main.ts";
}

/**
 * `pnpm mixdown up`: the whole service on this machine without Docker. Embedded PostgreSQL and
 * redis-server keep their data under the state dir, objects go to local disk, the API and (when
 * present) the worker run as children. A dead PostgreSQL, redis-server, API or worker is restarted
 * with backoff (`Supervisor`; PostgreSQL counts as up again once its crash recovery has run and it
 * accepts connections); one that keeps dying stops everything with its last log lines. Each
 * child's output goes to `<state>/logs/<name>.log`; the terminal shows the API's and the worker's
 * only once the banner (ending with the key) is out. Stops everything on Ctrl-C / SIGTERM.
 */
export async function upCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { "no-worker": { type: "boolean" } } });
  const dir = stateDir(env);
  mkdirSync(dir, { recursive: true });
  const already = readRunningStack(dir);
  if (already) throw new UsageError(`Mixdown is already up here (pid ${already.pid}) at ${already.baseUrl}.`);
  const runDir = path.join(dir, "run");
  const upPidFile = path.join(runDir, UP_PID_FILE);
  const starting = runningFromPidFile(upPidFile);
  if (starting !== undefined) throw new UsageError(`Mixdown is already starting or up here (pid ${starting}).`);
  if (!findRedisServer()) throw new RedisNotInstalledError();

  const port = Number(env.PORT ?? 8080);
  const host = env.HOST ?? "0.0.0.0";
  if (!(await canListen(port, host))) {
    throw new UsageError(`Port ${port} is in use. Pick another: PORT=8090 ./mixdown.sh up`);
  }
  const logsDir = path.join(dir, "logs");
  let bannerShown = false;
  const supervisor = new Supervisor({
    logsDir,
    runDir,
    report: (line) => console.log(line),
    onLine: (name, line) => {
      if (bannerShown && name !== "redis" && name !== "postgres") process.stdout.write(`${name.padEnd(6)}| ${line}\n`);
    },
  });

  let shuttingDown: Promise<number> | undefined;
  const shutdown = (code: number) => {
    shuttingDown ??= (async () => {
      process.stdout.write("\nStopping Mixdown…\n");
      // The last started first: the API and the worker, then redis-server and PostgreSQL.
      await supervisor.stop();
      removeStackInfo(dir);
      rmSync(upPidFile, { force: true });
      process.stdout.write("Stopped.\n");
      return code;
    })();
    return shuttingDown;
  };
  let forced = false;
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) {
      // A terminal's Ctrl-C reaches us directly and again through pnpm; only a later one means "hurry".
      if (forced || Date.now() - firstSignalAt < 2_000) return;
      forced = true;
      process.stdout.write(`${signal} again: killing everything now.\n`);
      supervisor.kill();
      return;
    }
    firstSignalAt = Date.now();
    void shutdown(0).then((code) => process.exit(code));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    const pgDir = await postgresDataDir(dir);
    // A previous `up` killed before it could stop its children (SIGKILL, a lost terminal) may have
    // left some running: on these data directories they would fight the ones started now.
    for (const left of await stopLeftovers(runDir, pgDir)) {
      console.log(`Stopped ${left}, left running by a previous mixdown up that did not stop it.`);
    }
    writePidFile(upPidFile, process.pid);
    const redisDir = path.join(dir, "redis");
    mkdirSync(redisDir, { recursive: true });
    // Fixed once: a restarted server must come back where the API and the worker reconnect.
    const redisPort = await freePort();
    const pgPort = await freePort();
    console.log(`Starting PostgreSQL (${pgDir}) and Redis (${redisDir})…`);
    const cluster = await preparePostgres(path.resolve(pgDir), POSTGRES_PASSWORD);
    await Promise.all([
      // Supervised like the others: restarted when it dies. Its launch resolves only once it
      // accepts connections, that is after the crash recovery an unclean exit needs; meanwhile
      // the API answers 503 and the worker retries its row writes. SIGINT is its fast shutdown.
      supervisor.start({
        name: "postgres",
        launch: (attach) => launchPostgresServer(cluster, pgPort, attach),
        stopSignal: "SIGINT",
        stopTimeoutMs: 60_000,
      }),
      supervisor.start({
        name: "redis",
        launch: (attach) => launchRedisServer({ port: redisPort, dir: redisDir, appendOnly: true, onSpawn: attach }),
        stopSignal: "SIGTERM",
        stopTimeoutMs: 10_000,
      }),
    ]);
    const serverUrl = postgresServerUrl(pgPort, POSTGRES_PASSWORD);
    await ensureDatabase(`${serverUrl}/postgres`, "mixdown");
    const database = { url: `${serverUrl}/mixdown` };
    const migrations = await applyMigrations(database.url);
    console.log(
      migrations.applied.length
        ? `Applied migrations: ${migrations.applied.join(", ")}`
        : `Database up to date (${migrations.alreadyApplied.length} migrations).`,
    );

    const workerHealthPort = Number(env.WORKER_HEALTH_PORT ?? (await freePort()));
    const childEnv: Record<string, string | undefined> = {
      ...env,
      NODE_ENV: env.NODE_ENV ?? "development",
      HOST: host,
      PORT: String(port),
      DATABASE_URL: database.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      STORAGE_DRIVER: "local",
      STORAGE_LOCAL_DIR: path.join(dir, "storage"),
      SIGNED_URL_SECRET: env.SIGNED_URL_SECRET ?? persistentSecret(dir),
      TMP_DIR: env.TMP_DIR ?? path.join(dir, "tmp"),
      MODELS_DIR: env.MODELS_DIR ?? path.join(repoRoot, "models"),
      WORKER_HEALTH_PORT: String(workerHealthPort),
      // One worker on one machine, restarted within a second when it dies: its jobs are taken up
      // again once their lock lapses (10 s, found within 5 s more) rather than after 30-60 s.
      WORKER_LOCK_DURATION_MS: env.WORKER_LOCK_DURATION_MS ?? "10000",
      WORKER_STALLED_INTERVAL_MS: env.WORKER_STALLED_INTERVAL_MS ?? "5000",
      RECONCILE_INTERVAL_SECONDS: env.RECONCILE_INTERVAL_SECONDS ?? "10",
      // Already migrated above, once, before either process starts.
      AUTO_MIGRATE: "false",
    };
    // MIXDOWN_MODELS: what is missing is pulled before the API and the worker start, and makes their defaults.
    if (configuredModels(env).length > 0) {
      const pulled = await pullConfiguredModels(pullContext(undefined, childEnv, false), childEnv, (line) => console.log(line));
      if (pulled.code !== 0) throw new UsageError("MIXDOWN_MODELS could not be pulled (see above); Mixdown is not started.");
      Object.assign(childEnv, pulled.defaults);
    }
    const config = loadConfig(childEnv);
    const baseUrl = publicBaseUrl(config);
    mkdirSync(config.STORAGE_LOCAL_DIR, { recursive: true });
    mkdirSync(config.TMP_DIR, { recursive: true });

    const worker = workerEntry(env);
    const startup = new AbortController();
    if (!existsSync(path.join(repoRoot, API_ENTRY))) throw new UsageError(`${API_ENTRY} is missing from this checkout.`);
    await supervisor.start(appSpec("api", API_ENTRY, childEnv));
    const ready = [waitForHealth("API", `http://127.0.0.1:${port}/healthz`, startup.signal)];
    if (values["no-worker"]) {
      console.log("Worker not started (--no-worker): jobs stay queued.");
    } else if (existsSync(path.join(repoRoot, worker))) {
      // on jemalloc with MODEL_ALLOCATOR=jemalloc (@mixdown/separation's allocator.ts)
      await supervisor.start(appSpec("worker", worker, modelProcessEnv(childEnv)));
      ready.push(waitForHealth("worker", `http://127.0.0.1:${workerHealthPort}/healthz`, startup.signal));
    } else {
      console.log(`No ${worker} in this checkout yet: jobs are accepted and stay queued.`);
    }
    const startupFailure = supervisor.failed.then((failure) => {
      throw new ChildFailedError(describeFailure(failure));
    });
    await Promise.race([Promise.all(ready), startupFailure]).finally(() => startup.abort());
    supervisor.restartOnExit();
    writeStackInfo(dir, { pid: process.pid, databaseUrl: database.url, redisUrl: childEnv.REDIS_URL!, baseUrl });

    const { key, webhookSecret, signInCode } = await issueLocalKey(database.url);
    console.log(
      [
        "",
        "Mixdown is up.",
        `  Dashboard: ${baseUrl}/#/sign-in/${signInCode}`,
        "             (signs a browser in with the key below; the link works once, for 15 minutes)",
        `  Base URL:  ${baseUrl}/api/kits/v1`,
        `  Docs:      ${baseUrl}/docs`,
        `  Data:      ${dir}`,
        `  Logs:      ${logsDir}`,
        "",
        "Try it:",
        `  curl -H "Authorization: Bearer ${key}" ${baseUrl}/api/kits/v1/vocal-separations`,
        `  curl -H "Authorization: Bearer ${key}" -F inputFile=@song.mp3 ${baseUrl}/api/kits/v1/vocal-separations`,
        "",
        "Webhooks of jobs created with this key are signed with (see docs/api.md, Webhooks):",
        `  webhook-secret: ${webhookSecret}`,
        "",
        'Press Ctrl-C to stop. A fresh API key for caller "local":',
        key,
      ].join("\n"),
    );
    bannerShown = true;

    const failure = await supervisor.failed.then(describeFailure);
    if (shuttingDown) return await shuttingDown;
    console.error(failure);
    return await shutdown(1).then((code) => process.exit(code));
  } catch (error) {
    const childFailed = error instanceof ChildFailedError;
    if (childFailed) console.error(error.message);
    await shutdown(1);
    if (childFailed) return 1;
    throw error;
  }
}

class ChildFailedError extends Error {}

function describeFailure(failure: ChildFailure): string {
  const tail = failure.lastLines.slice(-FAILURE_TAIL).map((line) => `  ${line}`);
  return [`${failure.reason}. Its last lines (${failure.logFile}):`, ...tail].join("\n");
}

/**
 * The API or the worker: node with tsx, its own process group (a Ctrl-C reaches it through our
 * stop). Its stdin is a pipe from us that we never write to: when we die, even by SIGKILL, the
 * kernel closes our end and the child stops by itself (STOP_WHEN_STDIN_CLOSES).
 */
function appSpec(name: string, entry: string, env: Record<string, string | undefined>): ChildSpec {
  return {
    name,
    launch: () => {
      const child = spawn(process.execPath, ["--import", "tsx", entry], {
        cwd: repoRoot,
        env: { ...env, STOP_WHEN_STDIN_CLOSES: "true" },
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
      });
      superviseChild(child, "SIGTERM");
      return child;
    },
    stopSignal: "SIGTERM",
    // The worker finishes its running job first, if that is quick.
    stopTimeoutMs: 10_000,
  };
}

/** Polls `url` until it answers 200 or `signal` ends the wait (a child died: `supervisor.failed`). */
async function waitForHealth(what: string, url: string, signal: AbortSignal, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !signal.aborted) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  if (signal.aborted) return;
  throw new Error(`The ${what} did not answer ${url} within ${timeoutMs / 1000} s.`);
}

/** A new key for the local caller, and a one-time code for the dashboard link that signs a browser in with it. */
async function issueLocalKey(databaseUrl: string): Promise<{ key: string; webhookSecret: string; signInCode: string }> {
  const prisma = createPrismaClient(databaseUrl);
  try {
    // One caller for every `up`, so jobs made with an earlier key stay visible with the new one.
    const caller =
      (await prisma.caller.findFirst({ where: { name: LOCAL_CALLER }, orderBy: { id: "asc" } })) ??
      (await prisma.caller.create({ data: { name: LOCAL_CALLER } }));
    const { key, id, webhookSecret } = await new ApiKeyRepository(prisma).createApiKey({
      name: `mixdown up ${new Date().toISOString()}`,
      callerId: caller.id,
    });
    const { code } = await new DashboardSignInRepository(prisma).issue({ apiKeyId: id, apiKey: key });
    return { key, webhookSecret, signInCode: code };
  } finally {
    await prisma.$disconnect();
  }
}

function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
