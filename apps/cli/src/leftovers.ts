import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { isAlive } from "@mixdown/devstack";

/** `<runDir>/up.pid`: the `mixdown up` serving this state dir, from its first moment. */
export const UP_PID_FILE = "up.pid";

/**
 * When the process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`, field 22): with
 * the pid it names one process for good, where a pid alone may since belong to another. Undefined
 * where there is no /proc, or no such process.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: count from its end.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** `<pid>\n<start time>\n`: what `findLeftover` needs to tell the process from a later one with its pid. */
export function writePidFile(file: string, pid: number): void {
  writeFileSync(file, `${pid}\n${processStartTime(pid) ?? ""}\n`);
}

/** The process a pid file names, if it still runs (and, where /proc says, is the same process). */
export function runningFromPidFile(file: string): number | undefined {
  let pid: number;
  let started: string | undefined;
  try {
    const [first, second] = readFileSync(file, "utf8").split("\n");
    pid = Number(first);
    started = second || undefined;
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid || !isAlive(pid)) return undefined;
  const now = processStartTime(pid);
  // Without a recorded start time (or without /proc) the pid is all there is to go by.
  if (started && now && started !== now) return undefined;
  return pid;
}

/**
 * Sends `signal` to `pid` (to its process group when it leads one: a worker's ffmpeg children go
 * with it), waits up to `graceMs` for it to exit, then SIGKILLs the group. Resolves once it is gone.
 */
export async function stopProcess(pid: number, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  const send = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        // already gone
      }
    }
  };
  send(signal);
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (!isAlive(pid)) return;
  send("SIGKILL");
  const killDeadline = Date.now() + 5_000;
  while (isAlive(pid) && Date.now() < killDeadline) await new Promise((r) => setTimeout(r, 100));
}

/**
 * Stops what a previous `mixdown up` of this state dir left running when it was killed without
 * stopping its children: each process named by a `<runDir>/<name>.pid` (API, worker, redis-server),
 * and the PostgreSQL server that holds `pgDataDir` (its own `postmaster.pid`, checked against its
 * command line so that a reused pid is left alone). Returns one line per process stopped.
 */
export async function stopLeftovers(runDir: string, pgDataDir: string): Promise<string[]> {
  const stopped: string[] = [];
  if (existsSync(runDir)) {
    // The clients (API, worker) before the servers they hold connections to, as `up` stops them.
    const entries = readdirSync(runDir)
      // `up.pid` is the `up` itself: `upCommand` refuses to start while it runs.
      .filter((entry) => entry.endsWith(".pid") && entry !== UP_PID_FILE)
      .sort((a, b) => Number(SERVERS.has(a)) - Number(SERVERS.has(b)) || a.localeCompare(b));
    for (const entry of entries) {
      const file = path.join(runDir, entry);
      const pid = runningFromPidFile(file);
      const name = entry.slice(0, -".pid".length);
      if (pid !== undefined) {
        // PostgreSQL: SIGINT, its fast shutdown (SIGTERM would wait for every session to end).
        const postgres = name === "postgres";
        await stopProcess(pid, postgres ? "SIGINT" : "SIGTERM", postgres ? 30_000 : 10_000);
        stopped.push(`${postgres ? "PostgreSQL" : name} (pid ${pid})`);
      }
      rmSync(file, { force: true });
    }
  }
  const postmaster = leftoverPostmaster(pgDataDir);
  if (postmaster !== undefined) {
    // SIGINT: PostgreSQL's fast shutdown (a checkpoint, then exit).
    await stopProcess(postmaster, "SIGINT", 30_000);
    stopped.push(`PostgreSQL (pid ${postmaster})`);
  }
  return stopped;
}

/** Pid files of the servers `up` starts (stopped after the processes that use them). */
const SERVERS = new Set(["postgres.pid", "redis.pid"]);

/** The running postmaster of `dataDir`, if its lock file names one that is really it. */
function leftoverPostmaster(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 1 || !isAlive(pid)) return undefined;
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (!path.basename(command[0] ?? "").startsWith("postgres") || !command.includes(dataDir)) return undefined;
  } catch {
    // No /proc to tell it from another process with that pid: left alone (PostgreSQL refuses to start and says why).
    return undefined;
  }
  return pid;
}
