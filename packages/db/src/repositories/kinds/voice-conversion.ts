import type { Prisma, PrismaClient, VoiceConversionJob, VoiceModel } from "../../generated/prisma/client.ts";
import { jobOutputKeys } from "@mixdown/jobs";
import { poolOf } from "../../client.ts";
import { endInTransaction, endJobRow, groupByStatus, statusTable, type JobTableRows, type OwnedStorage } from "../job-table.ts";
import { readCallerPageWithVoiceModels, type Page, type PageRequest } from "../paging.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";

export interface VoiceConversionOutputs {
  outputKey: string;
  lossyOutputKey: string;
  recombinedKey: string | null;
}

export type RunnableVoiceConversion = VoiceConversionJob & { voiceModel: VoiceModel };

export interface NewVoiceConversionJob {
  callerId: number;
  voiceModelId: number;
  inputKey: string;
  inputFormat: string;
  backingKey?: string | null;
  params: Prisma.InputJsonValue;
  /** The input's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

export type VoiceConversionJobWithModel = VoiceConversionJob & { voiceModel: VoiceModel };

/** Voice conversion (inference) rows; reads include the voice model used. */
export class VoiceConversionJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row (with `db`: inside that transaction, as a quota's admission does). */
  create(input: NewVoiceConversionJob, db: Prisma.TransactionClient = this.prisma): Promise<VoiceConversionJobWithModel> {
    return db.voiceConversionJob.create({ data: { ...input, status: "running" }, include: { voiceModel: true } });
  }

  async findForCaller(callerId: number, id: number): Promise<VoiceConversionJobWithModel | null> {
    const row = await this.findById(id);
    return row?.callerId === callerId ? row : null;
  }

  findById(id: number): Promise<VoiceConversionJobWithModel | null> {
    return this.prisma.voiceConversionJob.findUnique({ where: { id }, include: { voiceModel: true } });
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<VoiceConversionJobWithModel>> {
    return readCallerPageWithVoiceModels<VoiceConversionJob, VoiceModel>(
      poolOf(this.prisma),
      "VoiceConversionJob",
      callerId,
      page,
    );
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.voiceConversionJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  async delete(id: number): Promise<void> {
    await this.prisma.voiceConversionJob.deleteMany({ where: { id } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.voiceConversionJob.count({ where });
  }
}

const TABLE = { kind: "voice-conversion", model: "voiceConversionJob" } as const;

/** What a voice conversion row owns in storage: its uploads (the take, and the backing it is recombined with) and its outputs' folder. */
const FILES: JobFiles = {
  table: "VoiceConversionJob",
  inputColumns: ["inputKey", "backingKey"],
  outputColumns: ["outputKey", "lossyOutputKey", "recombinedKey"],
  outputListColumns: [],
  kindColumns: [],
  recordKind: () => "voice_conversion",
  outputPrefix: (row) => jobOutputKeys("voice-conversion", row.id).prefix,
};

export function voiceConversionStorage(row: VoiceConversionJob): OwnedStorage {
  return ownedStorage(FILES, row);
}

/** The `voice-conversion` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const voiceConversionRows: JobTableRows<
  "voice-conversion",
  RunnableVoiceConversion,
  VoiceConversionOutputs,
  VoiceConversionJobWithModel
> = {
  kind: "voice-conversion",
  model: TABLE.model,
  table: (prisma, options = {}) => ({
    ...statusTable(prisma, TABLE, (r) => ({ queue: "voice-conversion", payload: { jobId: r.id } }), undefined, options),
    findRunnable: (id) =>
      prisma.voiceConversionJob.findFirst({ where: { id, status: "running" }, include: { voiceModel: true } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, async (tx) => {
        const row = await tx.voiceConversionJob.findUnique({ where: { id }, select: { audioSeconds: true } });
        if (!row) return null;
        return endJobRow(
          tx,
          TABLE,
          id,
          { ...outputs, status: "success", progress: 100, errorMessage: null },
          { kind: "voice_conversion", seconds: row.audioSeconds },
        );
      }),
  }),
  countByStatus: async (prisma) => {
    const groups = await prisma.voiceConversionJob.groupBy({ by: ["status"], _count: { _all: true } });
    return groupByStatus(groups, "voice_conversion");
  },
  owned: async (prisma, id) => {
    const row = await prisma.voiceConversionJob.findUnique({ where: { id } });
    return (
      row && { callerId: row.callerId, status: row.status, recordKind: "voice_conversion", storage: voiceConversionStorage(row) }
    );
  },
  webhookRow: (prisma, id) => prisma.voiceConversionJob.findUnique({ where: { id }, include: { voiceModel: true } }),
  files: FILES,
};
