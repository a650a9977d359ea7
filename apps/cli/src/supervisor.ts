import type { ChildProcess } from "node:child_process";
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { stopChild } from "@mixdown/devstack";
import { writePidFile } from "./leftovers.ts";

/** One long-running process the supervisor keeps alive. */
export interface ChildSpec {
  name: string;
  /**
   * Starts the process with stdout and stderr piped and resolves with it once it runs (or once it
   * is ready, for a server that says so). A launch that waits for readiness hands the process to
   * `attach` right after spawning it, so the log sees the output it waits on; a rejection counts
   * as a crash.
   */
  launch(attach: (child: ChildProcess) => void): ChildProcess | Promise<ChildProcess>;
  stopSignal: NodeJS.Signals;
  /** After this long a stop escalates to SIGKILL. */
  stopTimeoutMs: number;
}

export interface RestartPolicy {
  /** Delay before the first restart; each quick crash after it doubles it, up to `maxDelayMs`. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** A child that stayed up this long is healthy again: its next restart waits `initialDelayMs`. */
  resetAfterMs: number;
  /** A child that needed `maxRestarts` restarts within `windowMs` and dies again is crash-looping. */
  maxRestarts: number;
  windowMs: number;
}

export const defaultRestartPolicy: RestartPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 10_000,
  resetAfterMs: 30_000,
  maxRestarts: 5,
  windowMs: 60_000,
};

/** Why the supervisor gave up on a child, with what it printed last. */
export interface ChildFailure {
  name: string;
  reason: string;
  logFile: string;
  lastLines: string[];
}

export interface SupervisorOptions {
  /** `<logsDir>/<name>.log` receives each child's output (appended across runs). */
  logsDir: string;
  /**
   * `<runDir>/<name>.pid` holds each running child's pid and start time, so that the next `up`
   * can stop what a killed one left running (`stopLeftovers`).
   */
  runDir: string;
  policy?: Partial<RestartPolicy>;
  /** One line per event a person should see: a crash and the restart it gets. */
  report(line: string): void;
  /** Every output line of every child, once it is in the child's log file. */
  onLine?(name: string, line: string): void;
  /**
   * A log file past this size becomes `<name>.log.1` (replacing the previous one) and a new one
   * starts, so a service left up for months holds at most twice this per child. Default 20 MiB.
   */
  logMaxBytes?: number;
}

const DEFAULT_LOG_MAX_BYTES = 20 * 1024 * 1024;

const TAIL_LINES = 20;

/**
 * Its last lines can arrive after the exit; they belong in the log. A grandchild that keeps the
 * pipes open does not hold the stop up for long.
 */
function outputDrained(child: ChildProcess): Promise<void> {
  if (child.stdout?.closed !== false && child.stderr?.closed !== false) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 1_000);
    child.once("close", () => (clearTimeout(timer), resolve()));
  });
}

interface Supervised {
  spec: ChildSpec;
  logFile: string;
  pidFile: string;
  fd: number | undefined;
  /** Bytes in the current log file. */
  logBytes: number;
  tail: string[];
  attached: WeakSet<ChildProcess>;
  child: ChildProcess | undefined;
  startedAt: number;
  restarts: number[];
  nextDelayMs: number;
  timer: NodeJS.Timeout | undefined;
  launching: Promise<void> | undefined;
}

/**
 * Keeps `mixdown up`'s children running, as a process manager would: a child that dies is started
 * again after a backoff, and one that keeps dying is given up on (`failed`) so that `up` can say
 * what fails instead of restarting it forever. Until `restartOnExit()` (the start-up) any exit is
 * a failure at once: a child that cannot start is not helped by starting it five more times.
 */
export class Supervisor {
  /** Settles with the first child the supervisor gave up on. */
  readonly failed: Promise<ChildFailure>;
  private fail!: (failure: ChildFailure) => void;
  private readonly children: Supervised[] = [];
  private readonly policy: RestartPolicy;
  private restarting = false;
  private stopping: Promise<void> | undefined;

  constructor(private readonly options: SupervisorOptions) {
    this.policy = { ...defaultRestartPolicy, ...options.policy };
    this.failed = new Promise((resolve) => (this.fail = resolve));
    mkdirSync(options.logsDir, { recursive: true });
    mkdirSync(options.runDir, { recursive: true });
  }

  /** Starts a child and keeps it supervised; rejects when its first launch fails. */
  async start(spec: ChildSpec): Promise<ChildProcess> {
    if (this.children.some((c) => c.spec.name === spec.name)) throw new Error(`${spec.name} is already supervised`);
    const logFile = path.join(this.options.logsDir, `${spec.name}.log`);
    const fd = openSync(logFile, "a");
    const entry: Supervised = {
      spec,
      logFile,
      pidFile: path.join(this.options.runDir, `${spec.name}.pid`),
      fd,
      logBytes: fstatSync(fd).size,
      tail: [],
      attached: new WeakSet(),
      child: undefined,
      startedAt: 0,
      restarts: [],
      nextDelayMs: this.policy.initialDelayMs,
      timer: undefined,
      launching: undefined,
    };
    this.children.push(entry);
    await this.launch(entry);
    return entry.child!;
  }

  /** From now on a child that exits is restarted (the start-up is over). */
  restartOnExit(): void {
    this.restarting = true;
  }

  /** The running process of a child, if it is running. */
  current(name: string): ChildProcess | undefined {
    return this.children.find((c) => c.spec.name === name)?.child;
  }

  logFile(name: string): string {
    return path.join(this.options.logsDir, `${name}.log`);
  }

  /** Stops every child, the last started first, and restarts none of them. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const entry of this.children) clearTimeout(entry.timer);
      for (const entry of [...this.children].reverse()) {
        await entry.launching?.catch(() => undefined);
        const child = entry.child;
        if (child) {
          await stopChild(child, entry.spec.stopSignal, entry.spec.stopTimeoutMs);
          await outputDrained(child);
        }
        rmSync(entry.pidFile, { force: true });
      }
      for (const entry of this.children) {
        if (entry.fd !== undefined) closeSync(entry.fd);
        entry.fd = undefined;
      }
    })();
    return this.stopping;
  }

  /** Ends every running child now (a second Ctrl-C); a `stop()` under way then finishes at once. */
  kill(): void {
    for (const entry of this.children) entry.child?.kill("SIGKILL");
  }

  private async launch(entry: Supervised): Promise<void> {
    this.mark(entry, "starting");
    entry.startedAt = Date.now();
    const child = await entry.spec.launch((c) => this.attach(entry, c));
    this.attach(entry, child);
    entry.child = child;
    writePidFile(entry.pidFile, child.pid!);
    this.mark(entry, `started, pid ${child.pid}`);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      if (entry.child !== child) return;
      entry.child = undefined;
      rmSync(entry.pidFile, { force: true });
      this.crashed(entry, signal ? `signal ${signal}` : `code ${code}`);
    };
    if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
    else child.once("exit", onExit);
  }

  private crashed(entry: Supervised, how: string): void {
    if (this.stopping) return;
    const { name } = entry.spec;
    const upFor = entry.startedAt ? Date.now() - entry.startedAt : 0;
    this.mark(entry, `exited (${how})`);
    if (!this.restarting) {
      this.giveUp(entry, `${name} exited during start-up (${how})`);
      return;
    }
    const now = Date.now();
    if (upFor >= this.policy.resetAfterMs) entry.nextDelayMs = this.policy.initialDelayMs;
    entry.restarts = entry.restarts.filter((t) => now - t < this.policy.windowMs);
    if (entry.restarts.length >= this.policy.maxRestarts) {
      this.giveUp(
        entry,
        `${name} keeps failing: ${entry.restarts.length + 1} exits within ${this.policy.windowMs / 1000} s (last: ${how})`,
      );
      return;
    }
    entry.restarts.push(now);
    const delay = entry.nextDelayMs;
    entry.nextDelayMs = Math.min(delay * 2, this.policy.maxDelayMs);
    this.options.report(
      `${name} exited (${how}) after ${(upFor / 1000).toFixed(1)} s; restarting in ${delay / 1000} s ` +
        `(restart ${entry.restarts.length} within ${this.policy.windowMs / 1000} s)`,
    );
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      if (this.stopping) return;
      // Its output is already in the log (attach): the message's first line says enough.
      entry.launching = this.launch(entry).catch((error: Error) =>
        this.crashed(entry, `could not start: ${error.message.split("\n")[0]}`),
      );
    }, delay);
  }

  private giveUp(entry: Supervised, reason: string): void {
    this.fail({ name: entry.spec.name, reason, logFile: entry.logFile, lastLines: [...entry.tail] });
  }

  private attach(entry: Supervised, child: ChildProcess): void {
    if (entry.attached.has(child)) return;
    entry.attached.add(child);
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => {
        this.record(entry, line);
        this.options.onLine?.(entry.spec.name, line);
      });
    }
  }

  private record(entry: Supervised, line: string): void {
    this.write(entry, `${line}\n`);
    entry.tail.push(line);
    if (entry.tail.length > TAIL_LINES) entry.tail.shift();
  }

  /** The supervisor's own notes in a child's log file, so that the log tells restarts apart. */
  private mark(entry: Supervised, what: string): void {
    this.write(entry, `--- ${new Date().toISOString()} mixdown up: ${entry.spec.name} ${what}\n`);
  }

  private write(entry: Supervised, text: string): void {
    if (entry.fd === undefined) return;
    if (entry.logBytes > 0 && entry.logBytes + Buffer.byteLength(text) > (this.options.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES)) {
      closeSync(entry.fd);
      renameSync(entry.logFile, `${entry.logFile}.1`);
      entry.fd = openSync(entry.logFile, "a");
      entry.logBytes = 0;
    }
    entry.logBytes += writeSync(entry.fd, text);
  }
}
