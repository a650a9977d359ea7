import type { ExpiringJob, JobFiles, JobRetention, ResourceDeletions, RetentionStep } from "@mixdown/db";
import { jobFileTables } from "@mixdown/db";
import type { ObjectStorage } from "@mixdown/storage";
import type { Logger } from "pino";

/** RETENTION_*: minutes after a job's end (0: kept for good), and jobs per table and step at a time. */
export interface RetentionSettings {
  inputMinutes: number;
  outputMinutes: number;
  /** RETENTION_JOB_MINUTES: ended jobs' rows, deleted with whatever they still own. */
  jobMinutes: number;
  batch: number;
}

/** What one sweep removed. */
export interface SweepTotals {
  /** Jobs whose inputs / outputs were marked expired, and jobs deleted (`rows`), by record kind (rows: by kind). */
  expired: Record<RetentionStep | "rows", Record<string, number>>;
  /** Objects and their bytes deleted, by the key area (`uploads` for inputs, `outputs`). */
  objects: Record<RetentionStep, number>;
  bytes: Record<RetentionStep, number>;
}

/** Where a sweep's figures go (the worker's /metrics). */
export interface RetentionMetrics {
  /** `jobs` of `recordKind` lost their inputs or outputs, or (`rows`) were deleted. */
  retentionExpired(step: RetentionStep | "rows", recordKind: string, jobs: number): void;
  /** `objects` holding `bytes` were deleted from storage. */
  retentionDeleted(step: RetentionStep, objects: number, bytes: number): void;
  retentionSweepEnded(at: Date): void;
}

/**
 * The retention sweep: the ended jobs whose inputs or outputs are past their time lose them, a
 * batch at a time, oldest end first. Per batch, the objects are deleted first (S3: one
 * DeleteObjects request per 1,000 keys) and the rows marked after (see `JobRetention`), so a
 * sweep killed anywhere leaves nothing the next one does not finish. A running job's files are
 * never read: only rows that ended (status and `jobEndTime`) before the cutoff are.
 */
export class RetentionSweeper {
  constructor(
    private readonly deps: {
      retention: JobRetention;
      /** Deletes a job with its files, idempotency keys and webhooks (RETENTION_JOB_MINUTES). */
      deletions: Pick<ResourceDeletions, "deleteJob">;
      storage: ObjectStorage;
      settings: RetentionSettings;
      log: Logger;
      metrics?: RetentionMetrics;
      now?: () => Date;
    },
  ) {}

  async sweep(signal?: AbortSignal): Promise<SweepTotals> {
    const { settings, log } = this.deps;
    const totals: SweepTotals = {
      expired: { inputs: {}, outputs: {}, rows: {} },
      objects: { inputs: 0, outputs: 0 },
      bytes: { inputs: 0, outputs: 0 },
    };
    const minutes: Record<RetentionStep, number> = { inputs: settings.inputMinutes, outputs: settings.outputMinutes };
    const started = this.#now();
    for (const step of ["inputs", "outputs"] as const) {
      if (minutes[step] === 0) continue;
      const cutoff = new Date(started.getTime() - minutes[step] * 60_000);
      for (const { kind, files } of jobFileTables()) {
        for (;;) {
          if (signal?.aborted) return totals;
          const due = await this.deps.retention.due(kind, files, step, cutoff, settings.batch);
          if (due.length === 0) break;
          await this.#expire(files, step, due, totals);
          if (due.length < settings.batch) break;
        }
      }
    }
    if (settings.jobMinutes > 0) {
      // Rows last: a row past its time goes with whatever it still owns (its files, when they
      // are kept longer than the row, or for good), as a DELETE of it would.
      const cutoff = new Date(started.getTime() - settings.jobMinutes * 60_000);
      for (const { kind, files } of jobFileTables()) {
        for (;;) {
          if (signal?.aborted) return totals;
          const ids = await this.deps.retention.rowsDue(files, cutoff, settings.batch);
          for (const id of ids) await this.deps.deletions.deleteJob(kind, id);
          if (ids.length > 0) {
            totals.expired.rows[kind] = (totals.expired.rows[kind] ?? 0) + ids.length;
            this.deps.metrics?.retentionExpired("rows", kind, ids.length);
          }
          if (ids.length < settings.batch) break;
        }
      }
    }
    this.deps.metrics?.retentionSweepEnded(this.#now());
    const jobs = (step: RetentionStep | "rows") => Object.values(totals.expired[step]).reduce((a, b) => a + b, 0);
    if (jobs("inputs") + jobs("outputs") + jobs("rows") > 0)
      log.info(
        { expired: totals.expired, objects: totals.objects, bytes: totals.bytes },
        "retention sweep deleted expired files",
      );
    return totals;
  }

  /** Deletes one batch's files, then marks its rows. */
  async #expire(files: JobFiles, step: RetentionStep, due: ExpiringJob[], totals: SweepTotals): Promise<void> {
    const { storage, retention, metrics } = this.deps;
    const sizes = new Map<string, number>();
    const folders: string[] = [];
    if (step === "outputs") {
      // Everything in each job's output folder (what its record links to, and anything else an
      // attempt left there), with the sizes the listing gives.
      for (const job of due) {
        folders.push(job.outputPrefix);
        await storage.forEachObject(job.outputPrefix, (key, bytes) => void sizes.set(key, bytes));
      }
    }
    for (const job of due) for (const key of job.keys) if (!sizes.has(key)) sizes.set(key, (await storage.stat(key))?.size ?? -1);
    const present = [...sizes].filter(([, bytes]) => bytes >= 0);
    await storage.deleteMany([...sizes.keys()], { folders });
    await retention.markExpired(
      files,
      step,
      due.map((job) => job.id),
      this.#now(),
    );

    const bytes = present.reduce((sum, [, b]) => sum + b, 0);
    totals.objects[step] += present.length;
    totals.bytes[step] += bytes;
    metrics?.retentionDeleted(step, present.length, bytes);
    const byKind = new Map<string, number>();
    for (const job of due) byKind.set(job.recordKind, (byKind.get(job.recordKind) ?? 0) + 1);
    for (const [recordKind, jobs] of byKind) {
      totals.expired[step][recordKind] = (totals.expired[step][recordKind] ?? 0) + jobs;
      metrics?.retentionExpired(step, recordKind, jobs);
    }
  }

  #now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}
