import { readdir, rm, stat, utimes } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { JobFailure } from "@mixdown/jobs";
import { diskFreeBytes } from "@mixdown/storage";

/**
 * A job's work folder (TMP_DIR/jobs/<kind>-<row>-<attempt>-<pid>) is its own lease: the runner
 * touches it (its mtime) every JOB_FOLDER_REFRESH_MS while the job runs. A folder untouched for
 * JOB_FOLDER_STALE_MS belongs to no live job: its worker was killed (SIGKILL, out of memory, a lost
 * machine) before its `finally` removed it. Any worker sweeping that TMP_DIR removes it, at start
 * and every JOB_FOLDER_SWEEP_MS. Workers sharing one TMP_DIR (containers on one volume) never
 * remove each other's running jobs' folders: those are touched six times within the stale time.
 * Two minutes is four times BullMQ's default lock (WORKER_LOCK_DURATION_MS): a worker whose event
 * loop stops that long has lost its jobs to other workers already.
 */
export const JOB_FOLDER_REFRESH_MS = 20_000;
export const JOB_FOLDER_STALE_MS = 120_000;
export const JOB_FOLDER_SWEEP_MS = 60_000;

export const jobFoldersOf = (tmpDir: string) => join(tmpDir, "jobs");

/** Bytes of the files under `path` (what removing it gives back). */
async function sizeOf(path: string): Promise<number> {
  const info = await stat(path).catch(() => null);
  if (!info) return 0;
  if (!info.isDirectory()) return info.size;
  const entries = await readdir(path).catch(() => [] as string[]);
  let total = 0;
  for (const entry of entries) total += await sizeOf(join(path, entry));
  return total;
}

export interface SweepResult {
  removed: string[];
  bytes: number;
}

/**
 * Removes the job folders under `tmpDir` that no live job owns: untouched for `staleMs`, and not
 * in `running` (this process's own jobs' folders, never removed whatever their age).
 */
export async function sweepJobFolders(
  tmpDir: string,
  options: { staleMs?: number; running?: ReadonlySet<string>; now?: number } = {},
): Promise<SweepResult> {
  const { staleMs = JOB_FOLDER_STALE_MS, running = new Set<string>(), now = Date.now() } = options;
  const root = jobFoldersOf(tmpDir);
  const result: SweepResult = { removed: [], bytes: 0 };
  const entries = await readdir(root).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [] as string[];
    throw err;
  });
  for (const entry of entries.sort()) {
    const path = join(root, entry);
    if (running.has(path)) continue;
    const info = await stat(path).catch(() => null);
    if (!info || now - info.mtimeMs < staleMs) continue;
    const bytes = await sizeOf(path);
    await rm(path, { recursive: true, force: true });
    result.removed.push(entry);
    result.bytes += bytes;
  }
  return result;
}

/** Marks the folders as owned right now (their lease renewed); a folder gone meanwhile is skipped. */
export async function touchJobFolders(paths: Iterable<string>, now = new Date()): Promise<void> {
  await Promise.all([...paths].map((path) => utimes(path, now, now).catch(() => undefined)));
}

const mb = (bytes: number) => Math.floor(bytes / 1e6);

/**
 * Before a job writes anything: when TMP_DIR's free space is under `floorBytes`
 * (WORKER_MIN_FREE_DISK_MB), the job waits, checking every `pollMs`, up to `waitMs`
 * (WORKER_DISK_WAIT_SECONDS) for space to come back (other jobs ending, an operator freeing it),
 * then fails for good with a message naming the floor. A cancel (`signal`) stops the wait.
 */
export async function waitForFreeDisk(
  dir: string,
  floorBytes: number,
  options: { waitMs: number; pollMs?: number; signal?: AbortSignal; log?: Logger },
): Promise<void> {
  if (floorBytes <= 0) return;
  const { waitMs, pollMs = 5_000, signal, log } = options;
  const deadline = Date.now() + waitMs;
  let free = await diskFreeBytes(dir);
  if (free >= floorBytes) return;
  log?.warn(
    { tmpDir: dir, freeMb: mb(free), floorMb: mb(floorBytes), waitSeconds: Math.round(waitMs / 1000) },
    "TMP_DIR has less free space than WORKER_MIN_FREE_DISK_MB; the job waits for space",
  );
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, Math.max(0, deadline - Date.now()))));
    signal?.throwIfAborted();
    free = await diskFreeBytes(dir);
    if (free >= floorBytes) {
      log?.info({ tmpDir: dir, freeMb: mb(free) }, "TMP_DIR has space again; the job starts");
      return;
    }
  }
  throw new JobFailure(
    "permanent",
    `The worker's TMP_DIR (${dir}) has ${mb(free)} MB free, under its floor WORKER_MIN_FREE_DISK_MB=${mb(floorBytes)}; ` +
      `waited ${Math.round(waitMs / 1000)} s (WORKER_DISK_WAIT_SECONDS) for space. Free space there, or lower the floor.`,
  );
}

/**
 * Keeps a worker's job folders: sweeps TMP_DIR/jobs once at start (what a killed run of this or
 * another worker left), then renews the leases of the running jobs' folders every `refreshMs` and
 * sweeps every `sweepMs`. A failed sweep is logged and tried again at the next.
 */
export class JobFolderKeeper {
  readonly #timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly options: {
      tmpDir: string;
      running: () => ReadonlySet<string>;
      log: Logger;
      onSwept?: (result: SweepResult) => void;
      refreshMs?: number;
      sweepMs?: number;
      staleMs?: number;
    },
  ) {}

  async sweep(): Promise<SweepResult> {
    const { tmpDir, running, log, onSwept, staleMs } = this.options;
    try {
      const result = await sweepJobFolders(tmpDir, { running: running(), ...(staleMs ? { staleMs } : {}) });
      if (result.removed.length > 0) {
        log.warn(
          { folders: result.removed, mb: Math.round(result.bytes / 1e6) },
          "removed job folders that no live job owns (left by a killed worker)",
        );
        onSwept?.(result);
      }
      return result;
    } catch (err) {
      log.warn({ err: (err as Error).message }, "could not sweep the job folders; trying again later");
      return { removed: [], bytes: 0 };
    }
  }

  /** The first sweep, awaited; then the timers (unref'd: they never hold the process up). */
  async start(): Promise<SweepResult> {
    const first = await this.sweep();
    const { refreshMs = JOB_FOLDER_REFRESH_MS, sweepMs = JOB_FOLDER_SWEEP_MS, running } = this.options;
    this.#timers.push(
      setInterval(() => void touchJobFolders(running()), refreshMs).unref(),
      setInterval(() => void this.sweep(), sweepMs).unref(),
    );
    return first;
  }

  stop(): void {
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers.length = 0;
  }
}
