import type { JobRef } from "@mixdown/jobs";
import type { Prisma, PrismaClient, VoiceModel } from "../generated/prisma/client.ts";
import type { JobTable } from "./job-table.ts";

/**
 * A voice model whose media is still owed: ready, missing its demo or its cover, and not given
 * up on. To the reconciler it is a running `voice-model-media` job.
 */
export const VOICE_MODEL_LACKING_MEDIA = {
  state: "ready",
  mediaError: null,
  OR: [{ demoKey: null }, { imageKey: null }],
} as const satisfies Prisma.VoiceModelWhereInput;

export interface RenderedVoiceMedia {
  demoKey: string;
  /** Left out when the model already has a cover (the owner's upload). */
  imageKey?: string;
}

/**
 * A voice model's demo clip and cover as a job (`voice-model-media`): the VoiceModel row is the
 * record, so there is no progress or start time to write; a failure is kept as `mediaError` so
 * the model is not retried, and the model itself stays usable.
 */
export function voiceModelMediaTable(prisma: PrismaClient): JobTable<VoiceModel, RenderedVoiceMedia> {
  const giveUp = async (id: number, message: string) =>
    (await prisma.voiceModel.updateMany({ where: { id, ...VOICE_MODEL_LACKING_MEDIA }, data: { mediaError: message } })).count ===
    1;
  return {
    findRunnable: (id) => prisma.voiceModel.findFirst({ where: { id, ...VOICE_MODEL_LACKING_MEDIA } }),
    callerOf: (model) => model.ownerId,
    markStarted: async () => {},
    setProgress: async () => {},
    /** Records the rendered keys; an uploaded cover is never replaced. */
    async complete(id, media) {
      const { count } = await prisma.voiceModel.updateMany({
        where: { id, state: "ready" },
        data: { demoKey: media.demoKey, mediaError: null },
      });
      if (count === 0) return false;
      if (media.imageKey)
        await prisma.voiceModel.updateMany({ where: { id, imageKey: null }, data: { imageKey: media.imageKey } });
      return true;
    },
    fail: giveUp,
    cancel: (id) => giveUp(id, "cancelled"),
    ...voiceModelJobRows(prisma, "voice-model-media", VOICE_MODEL_LACKING_MEDIA, "mediaEnqueuedAt"),
  };
}

/** Ids of every model still owed media, for the worker's start-up pass. */
export async function listModelsOwedMedia(prisma: PrismaClient, limit = 10_000): Promise<number[]> {
  const rows = await prisma.voiceModel.findMany({
    where: VOICE_MODEL_LACKING_MEDIA,
    select: { id: true },
    orderBy: { id: "asc" },
    take: limit,
  });
  return rows.map((r) => r.id);
}

/**
 * The reconciler's side of a job kind whose row is a VoiceModel: `where` says which models have
 * work to do, `enqueuedColumn` records that their queue entry was added.
 */
export function voiceModelJobRows(
  prisma: PrismaClient,
  queue: "voice-model-media" | "voice-model-build",
  where: Prisma.VoiceModelWhereInput,
  enqueuedColumn: "mediaEnqueuedAt" | "buildEnqueuedAt",
): Pick<JobTable<never, never>, "findRunning" | "isRunning" | "markEnqueued"> {
  return {
    async findRunning(createdBefore, afterId, take) {
      const rows = await prisma.voiceModel.findMany({
        where: { ...where, createdAt: { lt: createdBefore }, id: { gt: afterId } },
        orderBy: { id: "asc" },
        take,
        select: { id: true, createdAt: true, mediaEnqueuedAt: true, buildEnqueuedAt: true },
      });
      return rows.map((r) => ({
        ref: { queue, payload: { voiceModelId: r.id } } as JobRef,
        enqueuedAt: r[enqueuedColumn],
        createdAt: r.createdAt,
      }));
    },
    isRunning: async (id) => (await prisma.voiceModel.count({ where: { id, ...where } })) > 0,
    async markEnqueued(id) {
      await prisma.voiceModel.updateMany({
        where: { id },
        data: enqueuedColumn === "mediaEnqueuedAt" ? { mediaEnqueuedAt: new Date() } : { buildEnqueuedAt: new Date() },
      });
    },
  };
}
