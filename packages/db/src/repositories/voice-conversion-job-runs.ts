import type { PrismaClient, VoiceConversionJob, VoiceModel } from "../generated/prisma/client.ts";
import { statusTable, type JobTable } from "./job-table.ts";

export interface VoiceConversionOutputs {
  outputKey: string;
  lossyOutputKey: string;
  recombinedKey: string | null;
}

export type RunnableVoiceConversion = VoiceConversionJob & { voiceModel: VoiceModel };

/** What the worker and the reconciler read and write on a voice conversion row. */
export function voiceConversionJobTable(prisma: PrismaClient): JobTable<RunnableVoiceConversion, VoiceConversionOutputs> {
  return {
    ...statusTable(prisma, "voiceConversionJob", (r) => ({ queue: "voice-conversion", payload: { jobId: r.id } })),
    findRunnable: (id) => prisma.voiceConversionJob.findFirst({ where: { id, status: "running" }, include: { voiceModel: true } }),
    callerOf: (row) => row.callerId,
    async complete(id, outputs) {
      const { count } = await prisma.voiceConversionJob.updateMany({
        where: { id, status: "running" },
        data: { ...outputs, status: "success", progress: 100, errorMessage: null, jobEndTime: new Date() },
      });
      return count === 1;
    },
  };
}
