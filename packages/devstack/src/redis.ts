import { execFileSync } from "node:child_process";
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

/**
 * Runs the system `redis-server` on 127.0.0.1 in the foreground as our child, configured as BullMQ
 * wants it (`noeviction`), without RDB snapshots.
 */
export async function startRedis(options: RedisOptions = {}): Promise<RunningRedis> {
  const binary = findRedisServer();
  if (!binary) throw new RedisNotInstalledError();
  const ephemeral = options.dataDir === undefined;
  const dir = options.dataDir ? path.resolve(options.dataDir) : await scratchDir();
  await mkdir(dir, { recursive: true });
  const port = options.port ?? (await freePort());
  const args = [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--daemonize", "no",
    "--save", "",
    "--appendonly", options.appendOnly ? "yes" : "no",
    "--dir", dir,
    "--maxmemory-policy", "noeviction",
    "--logfile", "",
  ];

  const launch = async () => {
    const { child } = await spawnUntilReady(binary, args, {
      name: `redis-server (port ${port})`,
      ready: /Ready to accept connections/,
    });
    superviseChild(child, "SIGTERM");
    return child;
  };

  let child = await launch();
  let stopped: Promise<void> | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart() {
      await stopChild(child, "SIGTERM");
      child = await launch();
    },
    stop() {
      stopped ??= (async () => {
        await stopChild(child, "SIGTERM");
        if (ephemeral) await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
