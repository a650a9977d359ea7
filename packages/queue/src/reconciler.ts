import { randomUUID } from "node:crypto";
import { bullJobId, rowIdOf, type JobRef } from "./jobs.ts";
import type { JobQueues } from "./queues.ts";

/** A `running` row as the reconciler sees it. */
export interface RunningJob {
  ref: JobRef;
  enqueuedAt: Date | null;
  createdAt: Date;
}

/**
 * What the reconciler needs from the job tables; `@mixdown/db`'s `JobRepository` provides it.
 * Kept as an interface so this package does not depend on the database package.
 */
export interface ReconcileSource {
  /** Running rows created before `createdBefore`, in id order, after `afterId` of the same queue. */
  findRunningJobs(
    createdBefore: Date,
    limit: number,
    cursor?: { queue: JobRef["queue"]; afterId: number },
  ): Promise<RunningJob[]>;
  isRunning(ref: JobRef): Promise<boolean>;
  markEnqueued(ref: JobRef): Promise<void>;
  /** Ends a running row as `error` (its queue entry failed for good but the row was never told). */
  markFailed(ref: JobRef, message: string): Promise<void>;
  /** The BullMQ priority a row's entry is added again with (a batch job's turn); undefined: none. */
  priorityOf?(ref: JobRef): Promise<number | undefined>;
}

export interface ReconcileResult {
  checked: number;
  /** Rows that had no usable queue entry and got one. */
  requeued: JobRef[];
  /** Rows whose entry existed but whose `enqueuedAt` was missing. */
  marked: JobRef[];
  /** Rows still running whose queue entry had failed for good: set to `error`. */
  failed: JobRef[];
  /** False when another process held the reconcile lock. */
  ran: boolean;
}

export interface ReconcilerOptions {
  queues: JobQueues;
  source: ReconcileSource;
  /** Rows younger than this are left alone: their create request may still be adding the entry. */
  graceSeconds: number;
  batchSize?: number;
  log?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

const LIVE_STATES = new Set(["waiting", "active", "delayed", "prioritized", "waiting-children", "paused"]);

/**
 * Makes sure every `running` row has a live queue entry. A create writes the row, then adds the
 * entry, then sets `enqueuedAt`; a crash or a Redis outage in between leaves a row without an
 * entry, and Redis data loss or retention can drop entries of rows that never finished.
 *
 * Per running row older than the grace period, by the state of its BullMQ job:
 * - missing: add it again (same deterministic id, a batch job with its turn as priority), set `enqueuedAt`;
 * - waiting/active/delayed/...: fine; set `enqueuedAt` if it was never set;
 * - completed while the row is still running (the worker's final row update was lost): the
 *   entry is removed and added again, the job runs once more (jobs are idempotent);
 * - failed (attempts exhausted or unrecoverable) while the row is still running (the worker died
 *   before recording the failure): the row is set to `error` with BullMQ's failure reason. It is
 *   not retried: the job already had every attempt JOB_ATTEMPTS allows.
 * Each decision re-reads the row first, so a worker finishing meanwhile is never overridden.
 * Passes in several processes are serialised by a short Redis lock.
 */
export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private readonly lockKey: string;

  constructor(private readonly options: ReconcilerOptions) {
    this.lockKey = `${options.queues.prefix}:reconciler:lock`;
  }

  async reconcileOnce(now: Date = new Date()): Promise<ReconcileResult> {
    const result: ReconcileResult = { checked: 0, requeued: [], marked: [], failed: [], ran: false };
    const { queues, source } = this.options;
    const token = randomUUID();
    const locked = await queues.connection.set(this.lockKey, token, "PX", 60_000, "NX");
    if (locked !== "OK") return result;
    result.ran = true;
    try {
      const cutoff = new Date(now.getTime() - this.options.graceSeconds * 1000);
      const batchSize = this.options.batchSize ?? 500;
      let cursor: { queue: JobRef["queue"]; afterId: number } | undefined;
      for (;;) {
        const rows = await source.findRunningJobs(cutoff, batchSize, cursor);
        if (rows.length === 0) break;
        for (const row of rows) {
          result.checked++;
          await this.reconcileRow(row, result);
        }
        const last = rows[rows.length - 1]!;
        cursor = { queue: last.ref.queue, afterId: rowIdOf(last.ref) };
        if (rows.length < batchSize) break;
      }
    } finally {
      // Release only our own lock.
      await queues.connection
        .eval(
          `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`,
          1,
          this.lockKey,
          token,
        )
        .catch(() => undefined);
    }
    if (result.requeued.length || result.failed.length || result.marked.length) {
      this.options.log?.info(
        { requeued: result.requeued.length, marked: result.marked.length, failed: result.failed.length },
        "reconciler repaired queue entries",
      );
    }
    return result;
  }

  private async reconcileRow(row: RunningJob, result: ReconcileResult): Promise<void> {
    const { queues, source } = this.options;
    const queue = queues.queue(row.ref.queue);
    const id = bullJobId(row.ref.queue, rowIdOf(row.ref));
    const state = await queue.getJobState(id);
    if (LIVE_STATES.has(state)) {
      if (!row.enqueuedAt) {
        await source.markEnqueued(row.ref);
        result.marked.push(row.ref);
      }
      return;
    }
    if (!(await source.isRunning(row.ref))) return;
    if (state === "failed") {
      const job = await queue.getJob(id);
      const reason = job?.failedReason ? `: ${job.failedReason}` : "";
      await source.markFailed(row.ref, `job failed after ${job?.attemptsMade ?? "all"} attempts${reason}`);
      result.failed.push(row.ref);
      return;
    }
    if (state === "completed") {
      const job = await queue.getJob(id);
      await job?.remove();
    }
    await queues.enqueue(row.ref, { priority: await source.priorityOf?.(row.ref) });
    await source.markEnqueued(row.ref);
    result.requeued.push(row.ref);
  }

  /** Runs a pass now and then every `intervalMs`; passes never overlap. */
  start(intervalMs: number): void {
    if (this.timer || intervalMs <= 0) return;
    const tick = () => {
      if (this.running) return;
      this.running = this.reconcileOnce()
        .catch((error: unknown) => this.options.log?.error({ err: error }, "reconciler pass failed"))
        .finally(() => {
          this.running = undefined;
        });
    };
    tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}

export function startReconciler(options: ReconcilerOptions, intervalMs: number): Reconciler {
  const reconciler = new Reconciler(options);
  reconciler.start(intervalMs);
  return reconciler;
}
