import { type ChildProcess, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { freePort, scratchDir, spawnUntilReady, stopChild, superviseChild } from "./processes.ts";

export interface RedisOptions {
  /** Default: a free port. */
  port?: number;
  /** Append-only persistence, so data survives `restart()`. Default false. */
  appendOnly?: boolean;
  /** Working directory (AOF files). Default: a temp dir, deleted on stop. */
  dataDir?: string;
}

export interface RunningRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Stops the server and starts it again on the same port and directory (for fault tests). */
  restart(): Promise<void>;
  /** Stops the server until `resume()` (connections are refused meanwhile), for outage tests. */
  halt(): Promise<void>;
  /** Starts the halted server again on the same port and directory. */
  resume(): Promise<void>;
}

export class RedisNotInstalledError extends Error {
  constructor() {
    super(
      "redis-server was not found on PATH. Install it with `sudo apt-get install -y redis-server` " +
        "(Debian/Ubuntu) or run ./mixdown.sh, which installs it.",
    );
  }
}

/** The `redis-server` binary on PATH (or in /usr/bin, /usr/sbin), or null. */
export function findRedisServer(): string | null {
  try {
    const found = execFileSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" }).trim();
    if (found) return found;
  } catch {
    // not on PATH
  }
  return ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"].find((p) => existsSync(p)) ?? null;
}

export interface RedisServerOptions {
  port: number;
  /** Working directory (AOF files); must exist. */
  dir: string;
  appendOnly: boolean;
  /** See `spawnUntilReady`: sees the server's process before any of its output is read. */
  onSpawn?: (child: ChildProcess) => void;
}

/**
 * One `redis-server` process on 127.0.0.1, configured as BullMQ wants it (`noeviction`), without
 * RDB snapshots; resolves once it accepts connections. For callers that restart it themselves
 * (`mixdown up`'s supervisor); `startRedis` wraps it for tests.
 */
export async function launchRedisServer(options: RedisServerOptions): Promise<ChildProcess> {
  const binary = findRedisServer();
  if (!binary) throw new RedisNotInstalledError();
  const args = [
    "--port",
    String(options.port),
    "--bind",
    "127.0.0.1",
    "--daemonize",
    "no",
    "--save",
    "",
    "--appendonly",
    options.appendOnly ? "yes" : "no",
    "--dir",
    options.dir,
    "--maxmemory-policy",
    "noeviction",
    "--logfile",
    "",
  ];
  const { child } = await spawnUntilReady(binary, args, {
    name: `redis-server (port ${options.port})`,
    ready: /Ready to accept connections/,
    onSpawn: options.onSpawn,
  });
  superviseChild(child, "SIGTERM");
  return child;
}

/** Runs the system `redis-server` in the foreground as our child (see `launchRedisServer`). */
export async function startRedis(options: RedisOptions = {}): Promise<RunningRedis> {
  if (!findRedisServer()) throw new RedisNotInstalledError();
  const ephemeral = options.dataDir === undefined;
  const dir = options.dataDir ? path.resolve(options.dataDir) : await scratchDir();
  await mkdir(dir, { recursive: true });
  const port = options.port ?? (await freePort());
  const launch = () => launchRedisServer({ port, dir, appendOnly: options.appendOnly ?? false });

  let child = await launch();
  let stopped: Promise<void> | undefined;
  let halted = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart() {
      await stopChild(child, "SIGTERM");
      child = await launch();
    },
    async halt() {
      if (halted) return;
      halted = true;
      await stopChild(child, "SIGTERM");
    },
    async resume() {
      if (!halted) return;
      child = await launch();
      halted = false;
    },
    stop() {
      stopped ??= (async () => {
        if (!halted) await stopChild(child, "SIGTERM");
        if (ephemeral) await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
