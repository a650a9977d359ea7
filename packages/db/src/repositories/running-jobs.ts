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
  constructor(
    private readonly prisma: PrismaClient,
    options: JobTableOptions = {},
  ) {
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

  /**
   * A batch job's turn among its caller's running batch jobs, the priority its batch's create gave
   * it (`BatchService.create`: each caller's n-th waiting batch job has priority n); undefined for
   * a job created on its own, which BullMQ serves before every prioritized entry.
   */
  async priorityOf(ref: JobRef): Promise<number | undefined> {
    if (ref.queue !== "separation") return undefined;
    const id = rowIdOf(ref);
    const row = await this.prisma.separationJob.findUnique({ where: { id }, select: { callerId: true, batchId: true } });
    if (row?.batchId == null) return undefined;
    const ahead = await this.prisma.separationJob.count({
      where: { callerId: row.callerId, status: "running", batchId: { not: null }, id: { lt: id } },
    });
    return ahead + 1;
  }

  /** Ends a still-running row as its kind ends a failure; a row that finished meanwhile is left as it is. */
  async markFailed(ref: JobRef, message: string): Promise<void> {
    await tableOf(this.tables, ref).fail(rowIdOf(ref), message);
  }
}
