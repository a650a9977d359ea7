import type { PrismaClient, VoiceModel } from "../generated/prisma/client.ts";
import { VOICE_MODEL_LACKING_MEDIA } from "./running-jobs.ts";

export interface RenderedVoiceMedia {
  demoKey: string;
  /** Left out when the model already has a cover (the owner's upload). */
  imageKey?: string;
}

/** What the worker reads and writes for a voice model's demo clip and cover image. */
export class VoiceModelMediaRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** The model when it is ready and still owed media, else null (gone, not ready, done or given up). */
  findOwed(id: number): Promise<VoiceModel | null> {
    return this.prisma.voiceModel.findFirst({ where: { id, ...VOICE_MODEL_LACKING_MEDIA } });
  }

  /** Ids of every model still owed media, for the worker's start-up pass. */
  async listOwed(limit = 10_000): Promise<number[]> {
    const rows = await this.prisma.voiceModel.findMany({ where: VOICE_MODEL_LACKING_MEDIA, select: { id: true }, orderBy: { id: "asc" }, take: limit });
    return rows.map((r) => r.id);
  }

  /** Records the rendered keys in one statement; an uploaded cover is never replaced. */
  async record(id: number, media: RenderedVoiceMedia): Promise<boolean> {
    const { count } = await this.prisma.voiceModel.updateMany({
      where: { id, state: "ready" },
      data: { demoKey: media.demoKey, mediaError: null },
    });
    if (count === 0) return false;
    if (media.imageKey) await this.prisma.voiceModel.updateMany({ where: { id, imageKey: null }, data: { imageKey: media.imageKey } });
    return true;
  }
}
