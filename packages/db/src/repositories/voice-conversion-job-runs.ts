import type { PrismaClient, VoiceConversionJob, VoiceModel } from "../generated/prisma/client.ts";
import { endInTransaction, endJobRow, statusTable, type JobTable, type JobTableOptions } from "./job-table.ts";

export interface VoiceConversionOutputs {
  outputKey: string;
  lossyOutputKey: string;
  recombinedKey: string | null;
}

export type RunnableVoiceConversion = VoiceConversionJob & { voiceModel: VoiceModel };

/** What the worker and the reconciler read and write on a voice conversion row. */
export function voiceConversionJobTable(
  prisma: PrismaClient,
  options: JobTableOptions = {},
): JobTable<RunnableVoiceConversion, VoiceConversionOutputs> {
  return {
    ...statusTable(
      prisma,
      "voiceConversionJob",
      (r) => ({ queue: "voice-conversion", payload: { jobId: r.id } }),
      undefined,
      options,
    ),
    findRunnable: (id) =>
      prisma.voiceConversionJob.findFirst({ where: { id, status: "running" }, include: { voiceModel: true } }),
    callerOf: (row) => row.callerId,
    complete: (id, outputs) =>
      endInTransaction(prisma, options, (tx) =>
        endJobRow(tx, "voiceConversionJob", id, { ...outputs, status: "success", progress: 100, errorMessage: null }),
      ),
  };
}
