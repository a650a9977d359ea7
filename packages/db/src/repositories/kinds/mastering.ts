import type { MasteringJob, Prisma, PrismaClient } from "../../generated/prisma/client.ts";
import { jobOutputKeys } from "@mixdown/jobs";
import { poolOf } from "../../client.ts";
import { endInTransaction, endJobRow, groupByStatus, statusTable, type JobTableRows, type OwnedStorage } from "../job-table.ts";
import { readPage, type Page, type PageRequest } from "../paging.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";

/** A mastering to write: the target upload and either a reference upload or a loudness target. */
export type NewMasteringJob = {
  callerId: number;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  /** The target's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
} & (
  | { referenceKey: string; referenceFormat: string; referenceFileName?: string | null }
  | { targetLufs: number; truePeakDb: number }
);

/** What a succeeded mastering publishes. */
export interface MasteringOutputs {
  outputKey: string;
  output16BitKey: string;
  lossyOutputKey: string;
  loudnessBefore: Prisma.InputJsonValue;
  loudnessAfter: Prisma.InputJsonValue;
  processor: string;
}

/** Mastering rows as the API creates and reads them. */
export class MasteringJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row (with `db`: inside that transaction, as a quota's admission does). */
  create(input: NewMasteringJob, db: Prisma.TransactionClient = this.prisma): Promise<MasteringJob> {
    return db.masteringJob.create({ data: { ...input, status: "running" } });
  }

  async findForCaller(callerId: number, id: number): Promise<MasteringJob | null> {
    const row = await this.prisma.masteringJob.findUnique({ where: { id } });
    return row?.callerId === callerId ? row : null;
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<MasteringJob>> {
    return readPage<MasteringJob>(poolOf(this.prisma), "MasteringJob", [{ column: "callerId", value: callerId }], page);
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.masteringJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.masteringJob.count({ where });
  }
}

const TABLE = { kind: "mastering", model: "masteringJob" } as const;

/** What a mastering row owns in storage: its uploads (target, reference) and its outputs' folder. */
const FILES: JobFiles = {
  table: "MasteringJob",
  inputColumns: ["inputKey", "referenceKey"],
  outputColumns: ["outputKey", "output16BitKey", "lossyOutputKey"],
  outputListColumns: [],
  kindColumns: [],
  recordKind: () => "mastering",
  outputPrefix: (row) => jobOutputKeys("mastering", row.id).prefix,
};

export function masteringStorage(row: MasteringJob): OwnedStorage {
  return ownedStorage(FILES, row);
}

/** The `mastering` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const masteringRows: JobTableRows<"mastering", MasteringJob, MasteringOutputs, MasteringJob> = {
  kind: "mastering",
  model: TABLE.model,
  table: (prisma, options = {}) => ({
    ...statusTable(prisma, TABLE, (r) => ({ queue: "mastering", payload: { jobId: r.id } }), undefined, options),
    findRunnable: (id) => prisma.masteringJob.findFirst({ where: { id, status: "running" } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, async (tx) => {
        const row = await tx.masteringJob.findUnique({ where: { id }, select: { audioSeconds: true } });
        if (!row) return null;
        return endJobRow(
          tx,
          TABLE,
          id,
          { ...outputs, status: "success", progress: 100, errorMessage: null },
          { kind: "mastering", seconds: row.audioSeconds },
        );
      }),
  }),
  countByStatus: async (prisma) => {
    const groups = await prisma.masteringJob.groupBy({ by: ["status"], _count: { _all: true } });
    return groupByStatus(groups, "mastering");
  },
  owned: async (prisma, id) => {
    const row = await prisma.masteringJob.findUnique({ where: { id } });
    return row && { callerId: row.callerId, status: row.status, recordKind: "mastering", storage: masteringStorage(row) };
  },
  webhookRow: (prisma, id) => prisma.masteringJob.findUnique({ where: { id } }),
  files: FILES,
};
