import type { Batch, Prisma, PrismaClient, SeparationJob, SeparationKind } from "../generated/prisma/client.ts";
import { poolOf } from "../client.ts";
import { readPage, type Page, type PageRequest } from "./paging.ts";
import { JOB_TABLE_ROWS } from "./kinds/index.ts";

/** A file a batch's create refused, and why (the words its 4xx would have had as a job's own create). */
export interface RejectedFile {
  fileName: string | null;
  reason: string;
}

export interface NewBatch {
  callerId: number;
  apiKeyId: number;
  kind: SeparationKind;
  rejected: RejectedFile[];
}

/** A batch with its jobs, in the order of its files (id order). */
export type BatchWithJobs = Batch & { jobs: SeparationJob[] };

/**
 * Batches (`POST /batches`): a row naming the separation jobs one create made
 * (`SeparationJob.batchId`). What a batch shows (counts, progress, its end) is read from its jobs.
 */
export class BatchRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row (with `db`: inside the transaction that writes its jobs). */
  create(input: NewBatch, db: Prisma.TransactionClient = this.prisma): Promise<Batch> {
    return db.batch.create({ data: { ...input, rejected: input.rejected as unknown as Prisma.InputJsonValue } });
  }

  /** The batch with its jobs, only when it is the caller's. */
  async findForCaller(callerId: number, id: number): Promise<BatchWithJobs | null> {
    const row = await this.prisma.batch.findUnique({ where: { id }, include: { jobs: { orderBy: { id: "asc" } } } });
    return row && row.callerId === callerId ? row : null;
  }

  /** A page of the caller's batches (id order, as every list), each with its jobs. */
  async listForCaller(callerId: number, page: PageRequest): Promise<Page<BatchWithJobs>> {
    const { rows, total } = await readPage<Batch>(poolOf(this.prisma), "Batch", [{ column: "callerId", value: callerId }], page);
    const jobs = await this.prisma.separationJob.findMany({
      where: { batchId: { in: rows.map((r) => r.id) } },
      orderBy: { id: "asc" },
    });
    return { rows: rows.map((r) => ({ ...r, jobs: jobs.filter((j) => j.batchId === r.id) })), total };
  }

  /**
   * How many of the caller's batch jobs of `kind`'s table are still running: the rank a new batch's
   * first job takes in the queue's priorities (see `docs/ARCHITECTURE.md`, Batches).
   */
  runningBatchJobs(callerId: number): Promise<number> {
    return this.prisma.separationJob.count({ where: { callerId, status: "running", batchId: { not: null } } });
  }

  /** The caller's running jobs of every job table kind: what MAX_CALLER_JOBS_IN_FLIGHT holds a batch's create to. */
  async runningJobs(callerId: number): Promise<number> {
    const counts = await Promise.all(
      Object.values(JOB_TABLE_ROWS).map((rows) =>
        // Every job table has callerId and status (`StatusTableModel`); the delegates' types differ only in their rows.
        (this.prisma[rows.model] as unknown as { count(args: object): Promise<number> }).count({
          where: { callerId, status: "running" },
        }),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Deletes the batch row and the idempotency keys that named it (its jobs are deleted first, as jobs). */
  async delete(id: number): Promise<void> {
    await this.prisma.$transaction([
      this.prisma.idempotencyKey.deleteMany({ where: { resourceKind: "batch", resourceId: id } }),
      this.prisma.batch.deleteMany({ where: { id } }),
    ]);
  }
}
