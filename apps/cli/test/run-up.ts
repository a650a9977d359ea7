import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "@mixdown/devstack";
import { repoRoot } from "./run-cli.ts";

/** A `mixdown up` running as a real process, in its own process group as a terminal would run it. */
export interface RunningUp {
  child: ChildProcess;
  home: string;
  port: number;
  baseUrl: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  /** Resolves with the key once the banner is out; rejects when `up` exits first. */
  key: Promise<string>;
  /** The pid `up`'s supervisor wrote for a child (`api`, `worker`, `redis`), if it runs. */
  pid(name: string): number | undefined;
  /** The postmaster's pid, from its data directory. */
  postgresPid(): number | undefined;
  /** Ctrl-C as a terminal sends it: SIGINT to the whole process group. */
  interrupt(): void;
  /** Removes the state dir once `up` has exited. */
  cleanUp(): Promise<void>;
}

/** `home`: the state dir of an earlier `up` to run on again (default: a fresh one). */
export async function startUp(
  env: Record<string, string> = {},
  readyTimeoutMs = 180_000,
  reuseHome?: string,
): Promise<RunningUp> {
  const home = reuseHome ?? (await mkdtemp(path.join(os.tmpdir(), "mixdown-up-test-")));
  // mkdtemp makes it private; PostgreSQL runs as the postgres user when the tests run as root.
  await chmod(home, 0o755);
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "apps/cli/src/main.ts", "up"], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: "", MIXDOWN_HOME: home, PORT: String(port), LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c) => (stdout += c));
  child.stderr!.on("data", (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const key = new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", () => {
      const match = /A fresh API key[^\n]*\n(mxd_\S+)\n/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`up exited with ${code}\n${stdout}\n${stderr}`)));
    setTimeout(
      () => reject(new Error(`up was not ready after ${readyTimeoutMs / 1000} s\n${stdout}\n${stderr}`)),
      readyTimeoutMs,
    ).unref();
  });
  key.catch(() => undefined);
  const readPid = (file: string) => (existsSync(file) ? Number(readFileSync(file, "utf8").split("\n")[0]) : undefined);
  return {
    child,
    home,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    key,
    pid: (name) => readPid(path.join(home, "run", `${name}.pid`)),
    postgresPid: () => readPid(path.join(home, "postgres", "postmaster.pid")),
    interrupt: () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGINT");
    },
    cleanUp: () => rm(home, { recursive: true, force: true }),
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
