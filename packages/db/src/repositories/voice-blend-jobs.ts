import type { PrismaClient, VoiceBlendJob, VoiceModel } from "../generated/prisma/client.ts";
import { poolOf } from "../client.ts";
import { readPage, type Page, type PageRequest } from "./paging.ts";

export interface NewVoiceBlendJob {
  callerId: number;
  /** 2 to 4 model ids, in order. */
  modelIds: number[];
  /** One share per model, in the same order (the last one already computed). */
  alphas: number[];
  title: string;
  /** Copied from the first model onto the output model. */
  architecture: string;
  sampleRate: number;
  /** The output model is an instrument model (a blend of instruments only). */
  instrument?: boolean;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

/** Voice blender rows and the output voice model each one creates. */
export class VoiceBlendJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Creates the output voice model (state `pending`, owned by the caller) and the blend job in
   * one transaction: either both exist or neither.
   */
  create(input: NewVoiceBlendJob): Promise<{ job: VoiceBlendJob; outputModel: VoiceModel }> {
    const [m1, m2, m3, m4] = input.modelIds;
    const [a1, a2, a3, a4] = input.alphas;
    return this.prisma.$transaction(async (tx) => {
      const outputModel = await tx.voiceModel.create({
        data: {
          ownerId: input.callerId,
          title: input.title,
          architecture: input.architecture,
          sampleRate: input.sampleRate,
          instrument: input.instrument === true,
          state: "pending",
          metadata: { blend: { modelIds: input.modelIds, alphas: input.alphas } },
        },
      });
      const job = await tx.voiceBlendJob.create({
        data: {
          callerId: input.callerId,
          webhookUrl: input.webhookUrl ?? null,
          apiKeyId: input.apiKeyId ?? null,
          model1Id: m1!,
          model2Id: m2!,
          model3Id: m3 ?? null,
          model4Id: m4 ?? null,
          alpha: a1!,
          alpha2: a2!,
          alpha3: a3 ?? null,
          alpha4: a4 ?? null,
          title: input.title,
          outputModelId: outputModel.id,
          status: "running",
        },
      });
      return { job, outputModel };
    });
  }

  async findForCaller(callerId: number, id: number): Promise<VoiceBlendJob | null> {
    const row = await this.findById(id);
    return row?.callerId === callerId ? row : null;
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<VoiceBlendJob>> {
    return readPage<VoiceBlendJob>(poolOf(this.prisma), "VoiceBlendJob", [{ column: "callerId", value: callerId }], page);
  }

  findById(id: number): Promise<VoiceBlendJob | null> {
    return this.prisma.voiceBlendJob.findUnique({ where: { id } });
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.voiceBlendJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.voiceBlendJob.count({ where });
  }
}
