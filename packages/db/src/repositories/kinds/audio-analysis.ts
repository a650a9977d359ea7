import type { AudioAnalysisJob, Prisma, PrismaClient } from "../../generated/prisma/client.ts";
import { jobOutputKeys } from "@mixdown/jobs";
import { poolOf } from "../../client.ts";
import { endInTransaction, endJobRow, groupByStatus, statusTable, type JobTableRows, type OwnedStorage } from "../job-table.ts";
import { readPage, type Page, type PageRequest } from "../paging.ts";
import { ownedStorage, type JobFiles } from "../job-files.ts";

export interface NewAudioAnalysisJob {
  callerId: number;
  inputKey: string;
  inputFormat: string;
  inputFileName?: string | null;
  /** The input's duration in seconds (what the job counts in its key's usage). */
  audioSeconds?: number | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** What a succeeded analysis publishes: the worker's result, stored as it is, and what found it. */
export interface AudioAnalysisOutput {
  analysis: Prisma.InputJsonValue;
  analyzer: string;
}

/** Audio analysis rows as the API creates and reads them. */
export class AudioAnalysisJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes the row (with `db`: inside that transaction, as a quota's admission does). */
  create(input: NewAudioAnalysisJob, db: Prisma.TransactionClient = this.prisma): Promise<AudioAnalysisJob> {
    return db.audioAnalysisJob.create({ data: { ...input, status: "running" } });
  }

  async findForCaller(callerId: number, id: number): Promise<AudioAnalysisJob | null> {
    const row = await this.prisma.audioAnalysisJob.findUnique({ where: { id } });
    return row?.callerId === callerId ? row : null;
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<AudioAnalysisJob>> {
    return readPage<AudioAnalysisJob>(poolOf(this.prisma), "AudioAnalysisJob", [{ column: "callerId", value: callerId }], page);
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.audioAnalysisJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.audioAnalysisJob.count({ where });
  }
}

const TABLE = { kind: "audio-analysis", model: "audioAnalysisJob" } as const;

/** What an analysis row owns in storage: its upload (the analysis itself is in the row). */
const FILES: JobFiles = {
  table: "AudioAnalysisJob",
  inputColumns: ["inputKey"],
  outputColumns: [],
  outputListColumns: [],
  kindColumns: [],
  recordKind: () => "audio_analysis",
  outputPrefix: (row) => jobOutputKeys("audio-analysis", row.id).prefix,
};

export function audioAnalysisStorage(row: AudioAnalysisJob): OwnedStorage {
  return ownedStorage(FILES, row);
}

/** The `audio-analysis` kind's rows: what the worker, the reconciler, /metrics and webhooks read and write. */
export const audioAnalysisRows: JobTableRows<"audio-analysis", AudioAnalysisJob, AudioAnalysisOutput, AudioAnalysisJob> = {
  kind: "audio-analysis",
  model: TABLE.model,
  table: (prisma, options = {}) => ({
    ...statusTable(prisma, TABLE, (r) => ({ queue: "audio-analysis", payload: { jobId: r.id } }), undefined, options),
    findRunnable: (id) => prisma.audioAnalysisJob.findFirst({ where: { id, status: "running" } }),
    callerOf: (row) => row.callerId,
    complete: (id, output) =>
      endInTransaction(prisma, options, async (tx) => {
        const row = await tx.audioAnalysisJob.findUnique({ where: { id }, select: { audioSeconds: true } });
        if (!row) return null;
        return endJobRow(
          tx,
          TABLE,
          id,
          { ...output, status: "success", progress: 100, errorMessage: null },
          { kind: "audio_analysis", seconds: row.audioSeconds },
        );
      }),
  }),
  countByStatus: async (prisma) => {
    const groups = await prisma.audioAnalysisJob.groupBy({ by: ["status"], _count: { _all: true } });
    return groupByStatus(groups, "audio_analysis");
  },
  owned: async (prisma, id) => {
    const row = await prisma.audioAnalysisJob.findUnique({ where: { id } });
    return (
      row && { callerId: row.callerId, status: row.status, recordKind: "audio_analysis", storage: audioAnalysisStorage(row) }
    );
  },
  webhookRow: (prisma, id) => prisma.audioAnalysisJob.findUnique({ where: { id } }),
  files: FILES,
};
