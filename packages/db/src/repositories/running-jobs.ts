import type { Prisma, PrismaClient } from "../generated/prisma/client.ts";

/**
 * The queue a row belongs to and its payload. The literals are those of `@mixdown/queue`
 * (structurally the same `JobRef`), repeated so the database package does not depend on it.
 */
export type RunningJobRef =
  | { queue: "separation"; payload: { kind: "vocal-separation" | "stem-split"; jobId: number } }
  | { queue: "voice-conversion"; payload: { jobId: number } }
  | { queue: "voice-blend"; payload: { jobId: number } }
  | { queue: "voice-model-media"; payload: { voiceModelId: number } };

type QueueOfRef = RunningJobRef["queue"];
type JobTableRef = Exclude<RunningJobRef, { queue: "voice-model-media" }>;
const ORDER: QueueOfRef[] = ["separation", "voice-conversion", "voice-blend", "voice-model-media"];

/**
 * A voice model whose media is still owed: ready, missing its demo or its cover, and not given
 * up on. To the reconciler it is a running `voice-model-media` job.
 */
export const VOICE_MODEL_LACKING_MEDIA = {
  state: "ready",
  mediaError: null,
  OR: [{ demoKey: null }, { imageKey: null }],
} as const satisfies Prisma.VoiceModelWhereInput;

interface Row {
  id: number;
  enqueuedAt: Date | null;
  createdAt: Date;
}

/**
 * `running` rows of every job table and the voice models still owed their media, for the
 * reconciler (implements `@mixdown/queue`'s ReconcileSource).
 */
export class RunningJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async findRunningJobs(
    createdBefore: Date,
    limit: number,
    cursor?: { queue: QueueOfRef; afterId: number },
  ): Promise<Array<{ ref: RunningJobRef; enqueuedAt: Date | null; createdAt: Date }>> {
    const out: Array<{ ref: RunningJobRef; enqueuedAt: Date | null; createdAt: Date }> = [];
    const start = cursor ? ORDER.indexOf(cursor.queue) : 0;
    for (let i = start; i < ORDER.length && out.length < limit; i++) {
      const queue = ORDER[i]!;
      const afterId = cursor && cursor.queue === queue ? cursor.afterId : 0;
      const args = {
        where: { status: "running" as const, createdAt: { lt: createdBefore }, id: { gt: afterId } },
        orderBy: { id: "asc" as const },
        take: limit - out.length,
        select: { id: true, enqueuedAt: true, createdAt: true },
      };
      if (queue === "voice-model-media") {
        const rows = await this.prisma.voiceModel.findMany({
          where: { ...VOICE_MODEL_LACKING_MEDIA, createdAt: { lt: createdBefore }, id: { gt: afterId } },
          orderBy: { id: "asc" },
          take: limit - out.length,
          select: { id: true, mediaEnqueuedAt: true, createdAt: true },
        });
        for (const r of rows) out.push({ ref: { queue, payload: { voiceModelId: r.id } }, enqueuedAt: r.mediaEnqueuedAt, createdAt: r.createdAt });
      } else if (queue === "separation") {
        const rows = await this.prisma.separationJob.findMany({ ...args, select: { ...args.select, kind: true } });
        for (const r of rows) {
          const kind = r.kind === "vocal_separation" ? "vocal-separation" : "stem-split";
          out.push({ ref: { queue, payload: { kind, jobId: r.id } }, enqueuedAt: r.enqueuedAt, createdAt: r.createdAt });
        }
      } else {
        const rows: Row[] =
          queue === "voice-conversion"
            ? await this.prisma.voiceConversionJob.findMany(args)
            : await this.prisma.voiceBlendJob.findMany(args);
        for (const r of rows) out.push({ ref: { queue, payload: { jobId: r.id } }, enqueuedAt: r.enqueuedAt, createdAt: r.createdAt });
      }
    }
    return out;
  }

  async isRunning(ref: RunningJobRef): Promise<boolean> {
    if (ref.queue === "voice-model-media") {
      return (await this.prisma.voiceModel.count({ where: { id: ref.payload.voiceModelId, ...VOICE_MODEL_LACKING_MEDIA } })) > 0;
    }
    const where = { id: ref.payload.jobId, status: "running" as const };
    switch (ref.queue) {
      case "separation":
        return (await this.prisma.separationJob.count({ where })) > 0;
      case "voice-conversion":
        return (await this.prisma.voiceConversionJob.count({ where })) > 0;
      case "voice-blend":
        return (await this.prisma.voiceBlendJob.count({ where })) > 0;
    }
  }

  async markEnqueued(ref: RunningJobRef): Promise<void> {
    if (ref.queue === "voice-model-media") {
      await this.prisma.voiceModel.updateMany({ where: { id: ref.payload.voiceModelId }, data: { mediaEnqueuedAt: new Date() } });
      return;
    }
    const args = { where: { id: ref.payload.jobId }, data: { enqueuedAt: new Date() } };
    switch (ref.queue) {
      case "separation":
        await this.prisma.separationJob.updateMany(args);
        return;
      case "voice-conversion":
        await this.prisma.voiceConversionJob.updateMany(args);
        return;
      case "voice-blend":
        await this.prisma.voiceBlendJob.updateMany(args);
        return;
    }
  }

  /**
   * Ends a still-running row as `error`; a row that finished meanwhile is left as it is. A voice
   * model still lacking media records the reason as its `mediaError`, so it is not retried.
   */
  async markFailed(ref: RunningJobRef, message: string): Promise<void> {
    if (ref.queue === "voice-model-media") {
      await this.prisma.voiceModel.updateMany({ where: { id: ref.payload.voiceModelId, ...VOICE_MODEL_LACKING_MEDIA }, data: { mediaError: message } });
      return;
    }
    await this.markJobFailed(ref, message);
  }

  private async markJobFailed(ref: JobTableRef, message: string): Promise<void> {
    const args = {
      where: { id: ref.payload.jobId, status: "running" as const },
      data: { status: "error" as const, errorMessage: message, jobEndTime: new Date() },
    };
    switch (ref.queue) {
      case "separation":
        await this.prisma.separationJob.updateMany(args);
        return;
      case "voice-conversion":
        await this.prisma.voiceConversionJob.updateMany(args);
        return;
      case "voice-blend":
        await this.prisma.$transaction(async (tx) => {
          const job = await tx.voiceBlendJob.findUnique({ where: { id: ref.payload.jobId } });
          const updated = await tx.voiceBlendJob.updateMany(args);
          if (job && updated.count > 0) {
            await tx.voiceModel.updateMany({ where: { id: job.outputModelId, state: "pending" }, data: { state: "failed" } });
          }
        });
        return;
    }
  }
}
