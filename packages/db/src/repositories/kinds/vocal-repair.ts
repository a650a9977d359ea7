import type { Prisma, PrismaClient, VocalRepairJob } from "../../generated/prisma/client.ts";
import { jobOutputKeys } from "@mixdown/jobs";
import { poolOf } from "../../client.ts";
import { endInTransaction, endJobRow, groupByStatus, statusTable, type JobTableRows, type OwnedStorage } from "../job-table.ts";
import { readPage, type Page, type PageRequest } from "../paging.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";

export interface NewVocalRepairJob {
  callerId: number;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  /** The steps asked for, in the order they run. */
  steps: string[];
  /** Whether the vocal separation isolates the input's vocal first. */
  isolateVocal: boolean;
  /** The input's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** What a succeeded repair publishes: the repaired vocal's keys, and the separation models that served it. */
export interface VocalRepairOutputs {
  outputKey: string;
  lossyOutputKey: string;
  models: string[];
}

/** Vocal repair rows as the API creates and reads them. */
export class VocalRepairJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row (with `db`: inside that transaction, as a quota's admission does). */
  create(input: NewVocalRepairJob, db: Prisma.TransactionClient = this.prisma): Promise<VocalRepairJob> {
    return db.vocalRepairJob.create({ data: { ...input, status: "running" } });
  }

  async findForCaller(callerId: number, id: number): Promise<VocalRepairJob | null> {
    const row = await this.prisma.vocalRepairJob.findUnique({ where: { id } });
    return row?.callerId === callerId ? row : null;
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<VocalRepairJob>> {
    return readPage<VocalRepairJob>(poolOf(this.prisma), "VocalRepairJob", [{ column: "callerId", value: callerId }], page);
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.vocalRepairJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.vocalRepairJob.count({ where });
  }
}

const TABLE = { kind: "vocal-repair", model: "vocalRepairJob" } as const;

/** What a repair row owns in storage: its upload and its outputs' folder. */
const FILES: JobFiles = {
  table: "VocalRepairJob",
  inputColumns: ["inputKey"],
  outputColumns: ["outputKey", "lossyOutputKey"],
  outputListColumns: [],
  kindColumns: [],
  recordKind: () => "vocal_repair",
  outputPrefix: (row) => jobOutputKeys("vocal-repair", row.id).prefix,
};

export function vocalRepairStorage(row: VocalRepairJob): OwnedStorage {
  return ownedStorage(FILES, row);
}

/** The `vocal-repair` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const vocalRepairRows: JobTableRows<"vocal-repair", VocalRepairJob, VocalRepairOutputs, VocalRepairJob> = {
  kind: "vocal-repair",
  model: TABLE.model,
  table: (prisma, options = {}) => ({
    ...statusTable(prisma, TABLE, (r) => ({ queue: "vocal-repair", payload: { jobId: r.id } }), undefined, options),
    findRunnable: (id) => prisma.vocalRepairJob.findFirst({ where: { id, status: "running" } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, async (tx) => {
        const row = await tx.vocalRepairJob.findUnique({ where: { id }, select: { audioSeconds: true } });
        if (!row) return null;
        return endJobRow(
          tx,
          TABLE,
          id,
          { ...outputs, status: "success", progress: 100, errorMessage: null },
          { kind: "vocal_repair", seconds: row.audioSeconds },
        );
      }),
  }),
  countByStatus: async (prisma) => {
    const groups = await prisma.vocalRepairJob.groupBy({ by: ["status"], _count: { _all: true } });
    return groupByStatus(groups, "vocal_repair");
  },
  owned: async (prisma, id) => {
    const row = await prisma.vocalRepairJob.findUnique({ where: { id } });
    return row && { callerId: row.callerId, status: row.status, recordKind: "vocal_repair", storage: vocalRepairStorage(row) };
  },
  webhookRow: (prisma, id) => prisma.vocalRepairJob.findUnique({ where: { id } }),
  files: FILES,
};
