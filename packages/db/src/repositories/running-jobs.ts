import { JOB_KINDS, rowIdOf, type JobKind, type JobRef } from "@mixdown/jobs";
import type { PrismaClient } from "../generated/prisma/client.ts";
import type { JobTableOptions, RunningRow } from "./job-table.ts";
import { createJobTables, tableOf, type MixdownJobTables } from "./job-tables.ts";

/**
 * Rows with work to do of every job kind, for the reconciler (implements `@mixdown/queue`'s
 * ReconcileSource): each kind's table says which of its rows are running.
 */
export class RunningJobRepository {
  private readonly tables: MixdownJobTables;

  /** `options.onWebhookOwed` queues the webhook of a row `markFailed` ends (see `createJobTables`). */
  constructor(prisma: PrismaClient, options: JobTableOptions = {}) {
    this.tables = createJobTables(prisma, options);
  }

  /** Running rows created before `createdBefore`, kind by kind in catalogue order, each in id order. */
  async findRunningJobs(createdBefore: Date, limit: number, cursor?: { queue: JobKind; afterId: number }): Promise<RunningRow[]> {
    const out: RunningRow[] = [];
    for (let i = cursor ? JOB_KINDS.indexOf(cursor.queue) : 0; i < JOB_KINDS.length && out.length < limit; i++) {
      const kind = JOB_KINDS[i]!;
      const afterId = cursor?.queue === kind ? cursor.afterId : 0;
      out.push(...(await this.tables[kind].findRunning(createdBefore, afterId, limit - out.length)));
    }
    return out;
  }

  isRunning(ref: JobRef): Promise<boolean> {
    return tableOf(this.tables, ref).isRunning(rowIdOf(ref));
  }

  markEnqueued(ref: JobRef): Promise<void> {
    return tableOf(this.tables, ref).markEnqueued(rowIdOf(ref));
  }

  /** Ends a still-running row as its kind ends a failure; a row that finished meanwhile is left as it is. */
  async markFailed(ref: JobRef, message: string): Promise<void> {
    await tableOf(this.tables, ref).fail(rowIdOf(ref), message);
  }
}
