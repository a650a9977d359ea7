import type { Prisma, PrismaClient, VoiceModel } from "../generated/prisma/client.ts";

/** Imported voice models: the row is created `pending`, then published once its file is stored. */
export class VoiceModelImportRepository {
  constructor(private readonly prisma: PrismaClient) {}

  createPending(
    input: Omit<
      Prisma.VoiceModelUncheckedCreateInput,
      "id" | "createdAt" | "state" | "fileKey" | "imageKey" | "buildEnqueuedAt" | "buildError"
    >,
  ): Promise<VoiceModel> {
    return this.prisma.voiceModel.create({ data: { ...input, state: "pending" } });
  }

  /**
   * `imageKey`: the cover the owner uploaded, stored before the model is published; `metadata`
   * replaces the row's (e.g. with the key of an RVC model's index, stored with it).
   */
  publish(id: number, fileKey: string, imageKey?: string, metadata?: Prisma.InputJsonObject): Promise<VoiceModel> {
    return this.prisma.voiceModel.update({
      where: { id },
      data: { fileKey, state: "ready", ...(imageKey ? { imageKey } : {}), ...(metadata ? { metadata } : {}) },
    });
  }

  /**
   * The file a pending model is built from (an RVC `.pth`, stored under the model's own prefix
   * after the row exists) and the metadata the import found; the build job picks the row up once
   * `referenceKey` is set.
   */
  setBuildSource(id: number, referenceKey: string, metadata: Prisma.InputJsonObject): Promise<VoiceModel> {
    return this.prisma.voiceModel.update({ where: { id }, data: { referenceKey, metadata } });
  }

  /** The cover the owner uploaded with a reference recording, stored while the model is still to be built. */
  setCover(id: number, imageKey: string): Promise<VoiceModel> {
    return this.prisma.voiceModel.update({ where: { id }, data: { imageKey } });
  }

  async markBuildEnqueued(id: number): Promise<void> {
    await this.prisma.voiceModel.updateMany({ where: { id }, data: { buildEnqueuedAt: new Date() } });
  }

  async markMediaEnqueued(id: number): Promise<void> {
    await this.prisma.voiceModel.updateMany({ where: { id }, data: { mediaEnqueuedAt: new Date() } });
  }

  async delete(id: number): Promise<void> {
    await this.prisma.voiceModel.deleteMany({ where: { id } });
  }
}
