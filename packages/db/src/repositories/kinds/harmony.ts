import type { Prisma, PrismaClient, HarmonyJob } from "../../generated/prisma/client.ts";
import { jobOutputKeys } from "@mixdown/jobs";
import { poolOf } from "../../client.ts";
import { endInTransaction, endJobRow, groupByStatus, statusTable, type JobTableRows, type OwnedStorage } from "../job-table.ts";
import { readPage, type Page, type PageRequest } from "../paging.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";

export interface NewHarmonyJob {
  callerId: number;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  interval: string;
  direction: string;
  /** The key the caller gave (`A minor`), or null: the worker finds it. */
  requestedKey: string | null;
  /** Whether the vocal separation isolates the input's vocal first. */
  isolateVocal: boolean;
  /** The input's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** What a succeeded harmony publishes: its files' keys, the key it is in and the separation models that isolated the vocal. */
export interface HarmonyOutputs {
  harmonyKey: string;
  lossyHarmonyKey: string;
  mixKey: string;
  lossyMixKey: string;
  key: string;
  keyConfidence: number | null;
  notes: number;
  models: string[];
}

/** Harmony rows as the API creates and reads them. */
export class HarmonyJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row (with `db`: inside that transaction, as a quota's admission does). */
  create(input: NewHarmonyJob, db: Prisma.TransactionClient = this.prisma): Promise<HarmonyJob> {
    return db.harmonyJob.create({ data: { ...input, status: "running" } });
  }

  async findForCaller(callerId: number, id: number): Promise<HarmonyJob | null> {
    const row = await this.prisma.harmonyJob.findUnique({ where: { id } });
    return row?.callerId === callerId ? row : null;
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<HarmonyJob>> {
    return readPage<HarmonyJob>(poolOf(this.prisma), "HarmonyJob", [{ column: "callerId", value: callerId }], page);
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.harmonyJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.harmonyJob.count({ where });
  }
}

const TABLE = { kind: "harmony", model: "harmonyJob" } as const;

/** What a harmony row owns in storage: its upload and its outputs' folder. */
const FILES: JobFiles = {
  table: "HarmonyJob",
  inputColumns: ["inputKey"],
  outputColumns: ["harmonyKey", "lossyHarmonyKey", "mixKey", "lossyMixKey"],
  outputListColumns: [],
  kindColumns: [],
  recordKind: () => "harmony",
  outputPrefix: (row) => jobOutputKeys("harmony", row.id).prefix,
};

export function harmonyStorage(row: HarmonyJob): OwnedStorage {
  return ownedStorage(FILES, row);
}

/** The `harmony` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const harmonyRows: JobTableRows<"harmony", HarmonyJob, HarmonyOutputs, HarmonyJob> = {
  kind: "harmony",
  model: TABLE.model,
  table: (prisma, options = {}) => ({
    ...statusTable(prisma, TABLE, (r) => ({ queue: "harmony", payload: { jobId: r.id } }), undefined, options),
    findRunnable: (id) => prisma.harmonyJob.findFirst({ where: { id, status: "running" } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, async (tx) => {
        const row = await tx.harmonyJob.findUnique({ where: { id }, select: { audioSeconds: true } });
        if (!row) return null;
        return endJobRow(
          tx,
          TABLE,
          id,
          { ...outputs, status: "success", progress: 100, errorMessage: null },
          { kind: "harmony", seconds: row.audioSeconds },
        );
      }),
  }),
  countByStatus: async (prisma) => {
    const groups = await prisma.harmonyJob.groupBy({ by: ["status"], _count: { _all: true } });
    return groupByStatus(groups, "harmony");
  },
  owned: async (prisma, id) => {
    const row = await prisma.harmonyJob.findUnique({ where: { id } });
    return row && { callerId: row.callerId, status: row.status, recordKind: "harmony", storage: harmonyStorage(row) };
  },
  webhookRow: (prisma, id) => prisma.harmonyJob.findUnique({ where: { id } }),
  files: FILES,
};
