import type { PrismaClient } from "../generated/prisma/client.ts";
import { endInTransaction, endJobRow, statusTable, type JobTable, type JobTableOptions } from "./job-table.ts";
import type { TtsJobWithModel } from "./tts-jobs.ts";

export interface TtsOutputs {
  outputKey: string;
  lossyOutputKey: string;
  /** The base synthesizer that spoke the text (`festival`, `espeak-ng`). */
  synthesizer: string;
}

export type RunnableTts = TtsJobWithModel;

/** What the worker and the reconciler read and write on a text-to-speech row. */
export function ttsJobTable(prisma: PrismaClient, options: JobTableOptions = {}): JobTable<RunnableTts, TtsOutputs> {
  return {
    ...statusTable(prisma, "ttsJob", (r) => ({ queue: "tts", payload: { jobId: r.id } }), undefined, options),
    findRunnable: (id) => prisma.ttsJob.findFirst({ where: { id, status: "running" }, include: { voiceModel: true } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, (tx) =>
        endJobRow(tx, "ttsJob", id, { ...outputs, status: "success", progress: 100, errorMessage: null }),
      ),
  };
}
