import type { PrismaClient, SeparationJob } from "../generated/prisma/client.ts";

export interface StoredStem {
  instrument: string;
  key: string;
}

export interface SeparationOutputs {
  vocalKey: string;
  lossyVocalKey: string;
  backingKey: string;
  stems: StoredStem[];
  lossyStems: StoredStem[];
}

/**
 * What the worker writes on a separation row. Every write is conditioned on the row still being
 * `running`, so a retried or duplicated delivery can never move a finished job again.
 */
export class SeparationJobRunRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** The row when it still has work to do, else null (finished, cancelled or deleted). */
  findRunnable(id: number): Promise<SeparationJob | null> {
    return this.prisma.separationJob.findFirst({ where: { id, status: "running" } });
  }

  async markStarted(id: number, firstAttempt: boolean): Promise<void> {
    await this.prisma.separationJob.updateMany({
      where: { id, status: "running" },
      data: firstAttempt ? { jobStartTime: new Date(), progress: 1 } : { progress: 1 },
    });
  }

  async setProgress(id: number, progress: number): Promise<void> {
    await this.prisma.separationJob.updateMany({
      where: { id, status: "running", progress: { lt: progress } },
      data: { progress },
    });
  }

  /** Publishes every output at once; returns false when the row had already left `running`. */
  async complete(id: number, outputs: SeparationOutputs): Promise<boolean> {
    const { count } = await this.prisma.separationJob.updateMany({
      where: { id, status: "running" },
      data: {
        ...outputs,
        stems: outputs.stems as unknown as object[],
        lossyStems: outputs.lossyStems as unknown as object[],
        status: "success",
        progress: 100,
        errorMessage: null,
        jobEndTime: new Date(),
      },
    });
    return count === 1;
  }

  async fail(id: number, message: string): Promise<boolean> {
    const { count } = await this.prisma.separationJob.updateMany({
      where: { id, status: "running" },
      data: { status: "error", errorMessage: message, jobEndTime: new Date() },
    });
    return count === 1;
  }
}
