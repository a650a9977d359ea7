import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { loadConfig, publicBaseUrl } from "@mixdown/config";
import { ApiKeyRepository, applyMigrations, createPrismaClient } from "@mixdown/db";
import {
  findRedisServer,
  postgresCanUse,
  RedisNotInstalledError,
  type RunningPostgres,
  type RunningRedis,
  startPostgres,
  startRedis,
  stopChild,
  superviseChild,
} from "@mixdown/devstack";
import { UsageError } from "../database.ts";
import { persistentSecret, readRunningStack, removeStackInfo, repoRoot, stateDir, writeStackInfo } from "../local-state.ts";

const API_ENTRY = "apps/api/src/main.ts";
const WORKER_ENTRY = "apps/worker/src/main.ts";
const LOCAL_CALLER = "local";

/**
 * `pnpm mixdown up`: the whole service on this machine without Docker. Embedded PostgreSQL and
 * redis-server keep their data under the state dir, objects go to local disk, the API and (when
 * present) the worker run as children. Stops everything on Ctrl-C / SIGTERM.
 */
export async function upCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { "no-worker": { type: "boolean" } } });
  const dir = stateDir(env);
  mkdirSync(dir, { recursive: true });
  const already = readRunningStack(dir);
  if (already) throw new UsageError(`Mixdown is already up here (pid ${already.pid}) at ${already.baseUrl}.`);
  if (!findRedisServer()) throw new RedisNotInstalledError();

  const port = Number(env.PORT ?? 8080);
  const host = env.HOST ?? "0.0.0.0";
  if (!(await canListen(port, host))) {
    throw new UsageError(`Port ${port} is in use. Pick another: PORT=8090 pnpm mixdown up`);
  }

  const services: { postgres?: RunningPostgres; redis?: RunningRedis; children: Array<{ name: string; child: ChildProcess }> } = {
    children: [],
  };
  let shuttingDown: Promise<number> | undefined;
  const shutdown = (code: number) => {
    shuttingDown ??= (async () => {
      process.stdout.write("\nStopping Mixdown…\n");
      await Promise.allSettled(services.children.map(({ child }) => stopChild(child, "SIGTERM", 10_000)));
      await Promise.allSettled([services.redis?.stop(), services.postgres?.stop()]);
      removeStackInfo(dir);
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
      for (const { child } of services.children) child.kill("SIGKILL");
      return;
    }
    firstSignalAt = Date.now();
    void shutdown(0).then((code) => process.exit(code));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    const pgDir = await postgresDataDir(dir);
    console.log(`Starting PostgreSQL (${pgDir}) and Redis (${path.join(dir, "redis")})…`);
    const [postgres, redis] = await Promise.all([
      startPostgres({ dataDir: pgDir }).then((s) => (services.postgres = s)),
      startRedis({ dataDir: path.join(dir, "redis"), appendOnly: true }).then((s) => (services.redis = s)),
    ]);
    const migrations = await applyMigrations(postgres.url);
    console.log(
      migrations.applied.length
        ? `Applied migrations: ${migrations.applied.join(", ")}`
        : `Database up to date (${migrations.alreadyApplied.length} migrations).`,
    );

    const childEnv: Record<string, string | undefined> = {
      ...env,
      NODE_ENV: env.NODE_ENV ?? "development",
      HOST: host,
      PORT: String(port),
      DATABASE_URL: postgres.url,
      REDIS_URL: redis.url,
      STORAGE_DRIVER: "local",
      STORAGE_LOCAL_DIR: path.join(dir, "storage"),
      SIGNED_URL_SECRET: env.SIGNED_URL_SECRET ?? persistentSecret(dir),
      TMP_DIR: env.TMP_DIR ?? path.join(dir, "tmp"),
      MODELS_DIR: env.MODELS_DIR ?? path.join(repoRoot, "models"),
      // Already migrated above, once, before either process starts.
      AUTO_MIGRATE: "false",
    };
    const config = loadConfig(childEnv);
    const baseUrl = publicBaseUrl(config);
    mkdirSync(config.STORAGE_LOCAL_DIR, { recursive: true });
    mkdirSync(config.TMP_DIR, { recursive: true });

    if (!existsSync(path.join(repoRoot, API_ENTRY))) throw new UsageError(`${API_ENTRY} is missing from this checkout.`);
    const api = startApp("api", API_ENTRY, childEnv);
    services.children.push({ name: "api", child: api });
    if (values["no-worker"]) {
      console.log("Worker not started (--no-worker): jobs stay queued.");
    } else if (existsSync(path.join(repoRoot, WORKER_ENTRY))) {
      services.children.push({ name: "worker", child: startApp("worker", WORKER_ENTRY, childEnv) });
    } else {
      console.log(`No ${WORKER_ENTRY} in this checkout yet: jobs are accepted and stay queued.`);
    }
    for (const { name, child } of services.children) {
      child.once("exit", (code, signal) => {
        if (shuttingDown) return;
        console.error(`${name} exited (code ${code}, signal ${signal}); stopping everything.`);
        void shutdown(1).then((c) => process.exit(c));
      });
    }

    await waitForHealth(`http://127.0.0.1:${port}/healthz`, api, 120_000);
    writeStackInfo(dir, { pid: process.pid, databaseUrl: postgres.url, redisUrl: redis.url, baseUrl });

    const key = await issueLocalKey(postgres.url);
    console.log(
      [
        "",
        "Mixdown is up.",
        `  Base URL:  ${baseUrl}/api/kits/v1`,
        `  Docs:      ${baseUrl}/docs`,
        `  Data:      ${dir}`,
        "",
        "Try it:",
        `  curl -H "Authorization: Bearer ${key}" ${baseUrl}/api/kits/v1/vocal-separations`,
        `  curl -H "Authorization: Bearer ${key}" -F inputFile=@song.mp3 ${baseUrl}/api/kits/v1/vocal-separations`,
        "",
        "Press Ctrl-C to stop. A fresh API key for caller \"local\":",
        key,
      ].join("\n"),
    );
    return await new Promise<number>(() => undefined);
  } catch (error) {
    await shutdown(1);
    throw error;
  }
}

/** `.mixdown/postgres`, unless we are root and the postgres user cannot reach it (a checkout in /root). */
async function postgresDataDir(dir: string): Promise<string> {
  const preferred = path.join(dir, "postgres");
  if (await postgresCanUse(preferred)) return preferred;
  const fallback = path.join("/var/lib/mixdown", createHash("sha256").update(dir).digest("hex").slice(0, 12), "postgres");
  console.log(`Note: the postgres user cannot reach ${dir}; keeping the database in ${fallback}.`);
  return fallback;
}

function startApp(name: string, entry: string, env: Record<string, string | undefined>): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: repoRoot,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  superviseChild(child, "SIGTERM");
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on("line", (line) => process.stdout.write(`${name.padEnd(6)}| ${line}\n`));
  }
  return child;
}

async function waitForHealth(url: string, api: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (api.exitCode !== null || api.signalCode !== null) throw new Error(`The API exited during start (code ${api.exitCode}).`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`The API did not answer ${url} within ${timeoutMs / 1000} s.`);
}

async function issueLocalKey(databaseUrl: string): Promise<string> {
  const prisma = createPrismaClient(databaseUrl);
  try {
    // One caller for every `up`, so jobs made with an earlier key stay visible with the new one.
    const caller =
      (await prisma.caller.findFirst({ where: { name: LOCAL_CALLER }, orderBy: { id: "asc" } })) ??
      (await prisma.caller.create({ data: { name: LOCAL_CALLER } }));
    const { key } = await new ApiKeyRepository(prisma).createApiKey({
      name: `mixdown up ${new Date().toISOString()}`,
      callerId: caller.id,
    });
    return key;
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
