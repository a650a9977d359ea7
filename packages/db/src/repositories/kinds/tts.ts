import type { Prisma, PrismaClient, TtsJob, VoiceModel } from "../../generated/prisma/client.ts";
import { jobOutputKeys } from "@mixdown/jobs";
import { poolOf } from "../../client.ts";
import { endInTransaction, endJobRow, groupByStatus, statusTable, type JobTableRows, type OwnedStorage } from "../job-table.ts";
import { readCallerPageWithVoiceModels, type Page, type PageRequest } from "../paging.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";

export interface NewTtsJob {
  callerId: number;
  voiceModelId: number;
  inputText: string;
  /** The language asked for (checked); null or absent: the default, English. */
  language?: string | null;
  /** The seconds the job holds of its key's quota while it runs (`estimateTtsSeconds`). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

export type TtsJobWithModel = TtsJob & { voiceModel: VoiceModel };
export type RunnableTts = TtsJobWithModel;

export interface TtsOutputs {
  outputKey: string;
  lossyOutputKey: string;
  /** The base synthesizer that spoke the text (`festival`, `espeak-ng`). */
  synthesizer: string;
  /** The spoken output's duration: what the job counts in its key's usage. */
  audioSeconds: number;
}

/** Text-to-speech rows as the API creates and reads them; reads include the voice model that speaks. */
export class TtsJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row (with `db`: inside that transaction, as a quota's admission does). */
  create(input: NewTtsJob, db: Prisma.TransactionClient = this.prisma): Promise<TtsJobWithModel> {
    return db.ttsJob.create({ data: { ...input, status: "running" }, include: { voiceModel: true } });
  }

  async findForCaller(callerId: number, id: number): Promise<TtsJobWithModel | null> {
    const row = await this.findById(id);
    return row?.callerId === callerId ? row : null;
  }

  findById(id: number): Promise<TtsJobWithModel | null> {
    return this.prisma.ttsJob.findUnique({ where: { id }, include: { voiceModel: true } });
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<TtsJobWithModel>> {
    return readCallerPageWithVoiceModels<TtsJob, VoiceModel>(poolOf(this.prisma), "TtsJob", callerId, page);
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.ttsJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.ttsJob.count({ where });
  }
}

const TABLE = { kind: "tts", model: "ttsJob" } as const;

/** What a text-to-speech row owns in storage: its outputs' folder (the text is in the row; nothing is uploaded). */
const FILES: JobFiles = {
  table: "TtsJob",
  // the text is on the row: nothing uploaded
  inputColumns: [],
  outputColumns: ["outputKey", "lossyOutputKey"],
  outputListColumns: [],
  kindColumns: [],
  recordKind: () => "tts",
  outputPrefix: (row) => jobOutputKeys("tts", row.id).prefix,
};

export function ttsStorage(row: TtsJob): OwnedStorage {
  return ownedStorage(FILES, row);
}

/** The `tts` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const ttsRows: JobTableRows<"tts", RunnableTts, TtsOutputs, TtsJobWithModel> = {
  kind: "tts",
  model: TABLE.model,
  table: (prisma, options = {}) => ({
    ...statusTable(prisma, TABLE, (r) => ({ queue: "tts", payload: { jobId: r.id } }), undefined, options),
    findRunnable: (id) => prisma.ttsJob.findFirst({ where: { id, status: "running" }, include: { voiceModel: true } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, (tx) =>
        endJobRow(
          tx,
          TABLE,
          id,
          { ...outputs, status: "success", progress: 100, errorMessage: null },
          { kind: "tts", seconds: outputs.audioSeconds },
        ),
      ),
  }),
  countByStatus: async (prisma) => {
    const groups = await prisma.ttsJob.groupBy({ by: ["status"], _count: { _all: true } });
    return groupByStatus(groups, "tts");
  },
  owned: async (prisma, id) => {
    const row = await prisma.ttsJob.findUnique({ where: { id } });
    return row && { callerId: row.callerId, status: row.status, recordKind: "tts", storage: ttsStorage(row) };
  },
  webhookRow: (prisma, id) => prisma.ttsJob.findUnique({ where: { id }, include: { voiceModel: true } }),
  files: FILES,
};
