import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { chmod, mkdtemp } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";

/** A free TCP port on 127.0.0.1 (the OS picks it; free at the moment of asking). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const running = new Map<ChildProcess, NodeJS.Signals>();
let exitHookInstalled = false;

/** How long the watchdog of a child whose parent died waits after the stop signal before SIGKILL. */
const ORPHAN_STOP_GRACE_SECONDS = 10;

/**
 * Makes sure a service process does not outlive this one. A normal exit signals it from the
 * `exit` hook; when this process dies without running hooks (SIGKILL, an unhandled fatal signal),
 * a tiny detached shell that polls our pid sends the signal instead, and SIGKILL if the child is
 * still there ORPHAN_STOP_GRACE_SECONDS later (a worker finishing its jobs against a Redis that
 * died with us would wait for ever). The SIGKILL goes to the child's process group too, when it
 * leads one (every service we start does: `detached`), so that what it started (a worker's
 * ffmpeg, PostgreSQL's backends) does not outlive it either.
 */
export function superviseChild(child: ChildProcess, stopSignal: NodeJS.Signals): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const [proc, signal] of running) proc.kill(signal);
    });
  }
  running.set(child, stopSignal);
  const watchdog = spawn(
    "sh",
    [
      "-c",
      'while kill -0 "$0" 2>/dev/null; do sleep 1; done; kill -s "$2" "$1" 2>/dev/null; ' +
        'i=0; while [ "$i" -lt "$3" ] && kill -0 "$1" 2>/dev/null; do sleep 1; i=$((i + 1)); done; ' +
        'kill -s KILL -- "-$1" 2>/dev/null; kill -s KILL "$1" 2>/dev/null',
      String(process.pid),
      String(child.pid),
      stopSignal.replace(/^SIG/, ""),
      String(ORPHAN_STOP_GRACE_SECONDS),
    ],
    { detached: true, stdio: "ignore" },
  );
  watchdog.unref();
  const release = () => {
    running.delete(child);
    if (watchdog.exitCode === null) watchdog.kill("SIGKILL");
  };
  child.once("exit", release);
  return release;
}

/** Sends `signal`, waits for the exit, escalates to SIGKILL after `timeoutMs`. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals, timeoutMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts `command` and resolves once a line of its output matches `ready`. Rejects with the
 * output so far when it exits first or takes longer than `timeoutMs`.
 */
export function spawnUntilReady(
  command: string,
  args: string[],
  options: {
    ready: RegExp;
    timeoutMs?: number;
    uid?: number;
    gid?: number;
    env?: NodeJS.ProcessEnv;
    name: string;
    /** Called right after the spawn, before any output is read: a caller that keeps the output sees all of it. */
    onSpawn?: (child: ChildProcess) => void;
  },
): Promise<{ child: ChildProcess; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      // Its own process group: a Ctrl-C meant for us reaches it through our shutdown, in order.
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      uid: options.uid,
      gid: options.gid,
      env: options.env ?? process.env,
    });
    options.onSpawn?.(child);
    let output = "";
    let settled = false;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-20_000);
      if (!settled && options.ready.test(output)) {
        settled = true;
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${options.name} ${why}.\n--- output ---\n${output.trim()}`));
    };
    const timer = setTimeout(() => fail(`was not ready after ${options.timeoutMs ?? 60_000} ms`), options.timeoutMs ?? 60_000);
    child.once("error", (error) => fail(`could not be started (${error.message})`));
    child.once("exit", (code, signal) => fail(`exited before it was ready (code ${code}, signal ${signal})`));
  });
}

const scratchRoot = path.join(os.tmpdir(), "mixdown-devstack");

/**
 * A fresh directory for one service of this process: `<tmp>/mixdown-devstack/<pid>-<random>`.
 * Directories left by processes that died without cleaning up are removed on the way.
 */
export async function scratchDir(): Promise<string> {
  const dir = await mkdtemp(path.join(sweptScratchRoot(), `${process.pid}-`));
  // Services that run as another user (postgres, when we are root) must be able to reach inside.
  await chmod(dir, 0o755);
  return dir;
}

let ownFiles: string | undefined;

/**
 * A fresh directory for a test's own files (audio it makes, files it downloads), named
 * `<tmp>/mixdown-devstack/<pid>-files/<prefix><random>`: removed when this process exits, or by the
 * next test process's sweep when this one was killed.
 */
export async function testFilesDir(prefix = "t-"): Promise<string> {
  if (ownFiles === undefined) {
    const root = path.join(sweptScratchRoot(), `${process.pid}-files`);
    mkdirSync(root, { recursive: true });
    process.once("exit", () => rmSync(root, { recursive: true, force: true }));
    ownFiles = root;
  }
  return mkdtemp(path.join(ownFiles, prefix));
}

/** The scratch root, made if missing, with the directories of dead processes removed (once per process). */
function sweptScratchRoot(): string {
  mkdirSync(scratchRoot, { recursive: true, mode: 0o755 });
  sweepAbandonedScratchDirs();
  return scratchRoot;
}

let swept = false;
function sweepAbandonedScratchDirs(): void {
  if (swept) return;
  swept = true;
  for (const entry of readdirSync(scratchRoot)) {
    const pid = Number(entry.split("-")[0]);
    if (!Number.isInteger(pid) || pid === process.pid || isAlive(pid)) continue;
    rmSync(path.join(scratchRoot, entry), { recursive: true, force: true });
  }
}

/** Whether a process with this pid exists (one we may not signal counts). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
