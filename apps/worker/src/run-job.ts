import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { UnrecoverableError, type Job } from "bullmq";
import pRetry from "p-retry";
import type { Logger } from "pino";
import { isDatabaseUnavailable, type JobTable, type MixdownJobTables, type OutputOf, type RunnableOf } from "@mixdown/db";
import { jobKind, JobFailure, type JobEndStatus, type JobKind, type PayloadByKind } from "@mixdown/jobs";
import { jobFoldersOf, waitForFreeDisk } from "./job-folders.ts";
import { progressReporter } from "./steps/progress.ts";

/** What `runJob` hands a kind's handler: its row, a work directory and the means to report and to stop. */
export interface JobContext<K extends JobKind> {
  kind: K;
  payload: PayloadByKind[K];
  rowId: number;
  /** What the kind's table found runnable (the row, with what the handler needs). */
  row: RunnableOf<K>;
  /** An empty directory of this attempt, removed when the attempt ends however it ends. */
  workDir: string;
  /** Aborted when the job is cancelled (`JobRunner.cancel`); handlers pass it on to long work. */
  signal: AbortSignal;
  log: Logger;
  /** A thread's progress fraction (0..1) -> the row's and the BullMQ job's progress (1..90). */
  reportProgress(fraction: number): void;
  /** Sets the row's progress to `percent` directly (for work done in a few known steps). */
  setProgress(percent: number): Promise<void>;
}

/**
 * A kind's audio work, and nothing of the lifecycle: it reads `ctx.row`, writes files under
 * `ctx.workDir` and storage keys of its own row, and returns what the table publishes. A
 * `JobFailure` says what kind of failure it is (`bad-input` ends the row at once); any other
 * error is `transient` and retried.
 */
export interface JobHandler<K extends JobKind> {
  run(ctx: JobContext<K>): Promise<OutputOf<K>>;
  /** After the row was published (`updated` false: it had ended meanwhile), e.g. queue follow-up work. */
  afterComplete?(ctx: JobContext<K>, output: OutputOf<K>, updated: boolean): Promise<void>;
  /**
   * After the job was cancelled: removes whatever `run` had already stored under the row's own
   * keys, so a cancelled job leaves no outputs behind. A failure is logged, never fatal.
   */
  discard?(ctx: JobContext<K>): Promise<void>;
}

/**
 * How one delivery ended in this process: BullMQ's return value, which the worker metrics read.
 * `end-unwritten`: the work succeeded but PostgreSQL stayed away through every try to publish it;
 * the row is still running, and the reconciler queues the job again (it runs once more and
 * publishes once).
 */
export type AttemptOutcome = "success" | "cancelled" | "nothing-to-do" | "end-unwritten";

/** How the row's start and end are written again while PostgreSQL is away. */
export interface RowWritePolicy {
  /** Tries per write, the first included. */
  attempts: number;
  /** Wait before the second try; each later wait doubles (up to 60 s). */
  delayMs: number;
}

/** A handler for every kind in the catalogue: a kind without one does not compile. */
/** Announced once per job when it ends for good (not on an attempt that will be retried). */
export interface JobEnded {
  kind: JobKind;
  rowId: number;
  /** The caller who owns the row; null for the public catalogue's voice models. */
  callerId: number | null;
  status: JobEndStatus;
  /** The reason, for `error`. */
  errorMessage?: string;
  /** This attempt's duration. */
  durationMs: number;
  bullJobId: string | undefined;
}
export type JobEndedListener = (event: JobEnded) => void | Promise<void>;

/**
 * Owns every job's lifecycle, the same for each kind: a child logger, the table's `findRunnable`
 * (a row that ended meanwhile is a no-op: jobs are at-least-once), `markStarted`, a work
 * directory removed in `finally`, the handler, then `complete` and progress 100; or, on failure,
 * `cancelled` -> the row ends `cancelled`; `bad-input`/`permanent` -> the row ends `error` and
 * BullMQ gets an UnrecoverableError (no retry); `transient` -> retried with backoff, and the last
 * attempt ends the row `error`. Each end is announced to the `onJobEnded` listeners.
 */
export class JobRunner {
  readonly #listeners = new Set<JobEndedListener>();
  readonly #running = new Map<string, AbortController>();
  /** The work folders of the jobs running here (their leases: job-folders.ts). */
  readonly #folders = new Set<string>();

  constructor(
    private readonly tables: MixdownJobTables,
    private readonly options: {
      tmpDir: string;
      logger: Logger;
      /**
       * How often a running job's row is checked to be still running (default 3 s): the safety
       * net under the cancel messages (a worker that missed one still stops the job this soon).
       */
      rowCheckIntervalMs?: number;
      /** Default: 7 tries, waits from 1 s (JOB_END_WRITE_ATTEMPTS, JOB_END_WRITE_DELAY_MS). */
      rowWrites?: RowWritePolicy;
      /**
       * TMP_DIR's free space under which a job waits before it writes anything, up to
       * `diskWaitMs`, then fails (WORKER_MIN_FREE_DISK_MB, WORKER_DISK_WAIT_SECONDS). 0: no floor.
       */
      minFreeDiskBytes?: number;
      diskWaitMs?: number;
    },
  ) {}

  /**
   * A write of the row's lifecycle, tried again with backoff while the database is unavailable
   * (any other error is thrown at once): a job whose work is done must not be lost, or run
   * again, because PostgreSQL restarted as it ended.
   */
  #write<T>(what: string, log: Logger, write: () => Promise<T>): Promise<T> {
    const { attempts, delayMs } = this.options.rowWrites ?? { attempts: 7, delayMs: 1_000 };
    const maxDelayMs = 60_000;
    return pRetry(write, {
      retries: attempts - 1,
      factor: 2,
      minTimeout: delayMs,
      maxTimeout: maxDelayMs,
      shouldRetry: ({ error }) => isDatabaseUnavailable(error),
      onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
        if (retriesLeft > 0 && isDatabaseUnavailable(error))
          log.warn(
            { err: error.message, attempt: attemptNumber, delayMs: Math.min(delayMs * 2 ** (attemptNumber - 1), maxDelayMs) },
            `the database is unavailable; will ${what} again`,
          );
      },
    });
  }

  /** Calls `listener` after every job's end; returns the unsubscribe function. A failing listener is logged, never fatal. */
  onJobEnded(listener: JobEndedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Aborts the running attempt of a row in this process: its handler's `signal` fires, and the
   * row ends `cancelled` (publishing nothing). False when this process is not running it.
   */
  cancel(kind: JobKind, rowId: number, reason = "cancelled"): boolean {
    const controller = this.#running.get(`${kind}:${rowId}`);
    if (!controller) return false;
    controller.abort(new JobFailure("cancelled", reason));
    return true;
  }

  /** The work folders of the jobs running in this process right now. */
  runningFolders(): ReadonlySet<string> {
    return this.#folders;
  }

  /** Rows running in this process right now. */
  runningJobs(): Array<{ kind: JobKind; rowId: number }> {
    return [...this.#running.keys()].map((key) => {
      const [kind, id] = key.split(":");
      return { kind: kind as JobKind, rowId: Number(id) };
    });
  }

  async run<K extends JobKind>(kind: K, job: Job<PayloadByKind[K]>, handler: JobHandler<K>): Promise<AttemptOutcome> {
    const table: JobTable<RunnableOf<K>, OutputOf<K>> = this.tables[kind];
    const rowId = (jobKind(kind).rowId as (p: PayloadByKind[K]) => number)(job.data);
    const log = this.options.logger.child({ kind, rowId, bullJobId: job.id, attempt: job.attemptsMade + 1 });
    const row = await this.#write("read the row", log, () => table.findRunnable(rowId));
    if (!row) {
      log.info("row has no work left; nothing to do");
      return "nothing-to-do";
    }
    const started = performance.now();
    const callerId = table.callerOf(row);
    const announce = (status: JobEndStatus, errorMessage?: string) =>
      this.#announce(
        {
          kind,
          rowId,
          callerId,
          status,
          ...(errorMessage !== undefined ? { errorMessage } : {}),
          durationMs: Math.round(performance.now() - started),
          bullJobId: job.id,
        },
        log,
      );

    await this.#write("mark the row started", log, () => table.markStarted(rowId, job.attemptsMade === 0));
    const key = `${kind}:${rowId}`;
    const controller = new AbortController();
    this.#running.set(key, controller);
    const workDir = join(jobFoldersOf(this.options.tmpDir), `${kind}-${rowId}-${job.attemptsMade}-${process.pid}`);
    const progress = progressReporter(job, (percent) => table.setProgress(rowId, percent), log);
    // A row found no longer running may have been completed by a duplicate delivery rather than
    // cancelled: then the outputs under its keys are that delivery's, and must not be discarded.
    let endedElsewhere = false;
    const rowCheck = watchRowStillRunning(table, rowId, this.options.rowCheckIntervalMs ?? 3_000, log, () => {
      if (controller.signal.aborted) return;
      endedElsewhere = true;
      controller.abort(new JobFailure("cancelled", "the row is no longer running"));
    });
    const ctx: JobContext<K> = {
      kind,
      payload: job.data,
      rowId,
      row,
      workDir,
      signal: controller.signal,
      log,
      reportProgress: progress.report,
      setProgress: (percent) => table.setProgress(rowId, percent),
    };
    this.#folders.add(workDir);
    try {
      await waitForFreeDisk(this.options.tmpDir, this.options.minFreeDiskBytes ?? 0, {
        waitMs: this.options.diskWaitMs ?? 300_000,
        signal: controller.signal,
        log,
      });
      await mkdir(workDir, { recursive: true });
      log.info("job started");
      const output = await handler.run(ctx);
      await progress.flush();
      controller.signal.throwIfAborted();
      let updated: boolean;
      try {
        updated = await this.#write("publish the outputs", log, () => table.complete(rowId, output));
      } catch (err) {
        if (!isDatabaseUnavailable(err)) throw err;
        // The outputs are stored under the row's own keys; a second run writes the same ones.
        log.error(
          { err: (err as Error).message },
          "the job's end could not be written: the database stayed away; the reconciler will run the job again",
        );
        return "end-unwritten";
      }
      // Not published because the row was cancelled while the outputs were being stored.
      if (!updated && controller.signal.aborted) throw controller.signal.reason;
      await handler.afterComplete?.(ctx, output, updated);
      await job.updateProgress(100);
      log.info({ ms: Math.round(performance.now() - started), updated }, updated ? "job succeeded" : "row had already ended");
      if (updated) await announce("success");
      return "success";
    } catch (err) {
      await progress.flush();
      const failure = classify(err, controller.signal);
      if (failure.kind === "cancelled") {
        // False when the API had ended the row already; the work stopped here either way.
        const ended = await this.#write("end the row cancelled", log, () => table.cancel(rowId)).catch((e: Error) => {
          // Still running: the reconciler finds its entry completed and queues it again, and
          // that run finds the row cancelled by then, or does the work.
          log.error({ err: e.message }, "could not mark the row as cancelled");
          return false;
        });
        if (ended || !endedElsewhere)
          await handler
            .discard?.(ctx)
            .catch((e: Error) => log.warn({ err: e.message }, "could not remove the cancelled job's partial outputs"));
        log.info({ ended, ms: Math.round(performance.now() - started) }, "job cancelled");
        if (ended) await announce("cancelled");
        return "cancelled";
      }
      const attempts = job.opts.attempts ?? 1;
      const final = !failure.retryable || job.attemptsMade + 1 >= attempts;
      if (!final) throw err;
      const message = failure.retryable ? `Processing failed after ${attempts} attempts: ${failure.message}` : failure.message;
      const ended = await this.#write("end the row error", log, () => table.fail(rowId, message)).catch((e: Error) => {
        // The reconciler ends the row from BullMQ's failed entry.
        log.error({ err: e.message }, "could not mark the row as failed");
        return false;
      });
      if (ended) await announce("error", message);
      throw failure.retryable ? err : new UnrecoverableError(message);
    } finally {
      rowCheck.stop();
      this.#running.delete(key);
      await rm(workDir, { recursive: true, force: true });
      this.#folders.delete(workDir);
    }
  }

  async #announce(event: JobEnded, log: Logger): Promise<void> {
    for (const listener of this.#listeners) {
      try {
        await listener(event);
      } catch (err) {
        log.warn({ err: (err as Error).message }, "a job-ended listener failed");
      }
    }
  }
}

/**
 * Calls `stop` once the row is no longer running: ended by a cancel whose message this worker
 * missed, by a duplicate delivery, or deleted. A failed check is only logged.
 */
function watchRowStillRunning(
  table: JobTable<unknown, unknown>,
  rowId: number,
  intervalMs: number,
  log: Logger,
  stop: () => void,
) {
  let checking = false;
  let stopped = false;
  const timer = setInterval(() => {
    if (checking || stopped) return;
    checking = true;
    table
      .isRunning(rowId)
      .then(
        (running) => {
          if (!running && !stopped) {
            stopped = true;
            log.info("the row is no longer running; stopping the job");
            stop();
          }
        },
        (err: Error) => log.warn({ err: err.message }, "could not check that the row is still running"),
      )
      .finally(() => {
        checking = false;
      });
  }, intervalMs);
  timer.unref();
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/**
 * The failure class of whatever a handler threw: a `JobFailure` says it; an abort of the job's
 * own signal is `cancelled`; BullMQ's UnrecoverableError is `permanent`; a full disk (ENOSPC) is
 * `transient` with a message naming it; the rest is `transient`.
 */
function classify(err: unknown, signal: AbortSignal): JobFailure {
  if (signal.aborted) return signal.reason instanceof JobFailure ? signal.reason : new JobFailure("cancelled", "cancelled");
  if (err instanceof JobFailure) return err;
  if (err instanceof UnrecoverableError) return new JobFailure("permanent", err.message);
  // A full disk: retried (the attempt's files are removed, other jobs end), with a reason a
  // person can act on instead of the system call's.
  if ((err as NodeJS.ErrnoException)?.code === "ENOSPC") {
    const where = (err as NodeJS.ErrnoException).path;
    return new JobFailure(
      "transient",
      `The worker's disk is full${where ? ` (writing ${where})` : ""}: free space in TMP_DIR, or lower MAX_SEPARATION_SECONDS / MAX_CONVERSION_SECONDS`,
    );
  }
  return new JobFailure("transient", err instanceof Error ? err.message : String(err));
}
