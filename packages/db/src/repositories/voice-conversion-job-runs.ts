import type { PrismaClient, VoiceConversionJob, VoiceModel } from "../generated/prisma/client.ts";

export interface VoiceConversionOutputs {
  outputKey: string;
  lossyOutputKey: string;
  recombinedKey: string | null;
}

/**
 * What the worker writes on a voice conversion row. Every write is conditioned on the row still
 * being `running`, so a retried or duplicated delivery never moves a finished job again.
 */
export class VoiceConversionJobRunRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** The row (with its voice model) when it still has work to do, else null. */
  findRunnable(id: number): Promise<(VoiceConversionJob & { voiceModel: VoiceModel }) | null> {
    return this.prisma.voiceConversionJob.findFirst({ where: { id, status: "running" }, include: { voiceModel: true } });
  }

  async markStarted(id: number, firstAttempt: boolean): Promise<void> {
    await this.prisma.voiceConversionJob.updateMany({
      where: { id, status: "running" },
      data: firstAttempt ? { jobStartTime: new Date(), progress: 1 } : { progress: 1 },
    });
  }

  async setProgress(id: number, progress: number): Promise<void> {
    await this.prisma.voiceConversionJob.updateMany({ where: { id, status: "running", progress: { lt: progress } }, data: { progress } });
  }

  /** Publishes every output at once; false when the row had already left `running`. */
  async complete(id: number, outputs: VoiceConversionOutputs): Promise<boolean> {
    const { count } = await this.prisma.voiceConversionJob.updateMany({
      where: { id, status: "running" },
      data: { ...outputs, status: "success", progress: 100, errorMessage: null, jobEndTime: new Date() },
    });
    return count === 1;
  }
}
