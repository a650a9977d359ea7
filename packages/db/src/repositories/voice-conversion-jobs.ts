import type { Prisma, PrismaClient, VoiceConversionJob, VoiceModel } from "../generated/prisma/client.ts";
import { poolOf } from "../client.ts";
import { readCallerPageWithVoiceModels, type Page, type PageRequest } from "./paging.ts";

export interface NewVoiceConversionJob {
  callerId: number;
  voiceModelId: number;
  inputKey: string;
  inputFormat: string;
  backingKey?: string | null;
  params: Prisma.InputJsonValue;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

export type VoiceConversionJobWithModel = VoiceConversionJob & { voiceModel: VoiceModel };

/** Voice conversion (inference) rows; reads include the voice model used. */
export class VoiceConversionJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  create(input: NewVoiceConversionJob): Promise<VoiceConversionJobWithModel> {
    return this.prisma.voiceConversionJob.create({ data: { ...input, status: "running" }, include: { voiceModel: true } });
  }

  async findForCaller(callerId: number, id: number): Promise<VoiceConversionJobWithModel | null> {
    const row = await this.findById(id);
    return row?.callerId === callerId ? row : null;
  }

  findById(id: number): Promise<VoiceConversionJobWithModel | null> {
    return this.prisma.voiceConversionJob.findUnique({ where: { id }, include: { voiceModel: true } });
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<VoiceConversionJobWithModel>> {
    return readCallerPageWithVoiceModels<VoiceConversionJob, VoiceModel>(
      poolOf(this.prisma),
      "VoiceConversionJob",
      callerId,
      page,
    );
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.voiceConversionJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  async delete(id: number): Promise<void> {
    await this.prisma.voiceConversionJob.deleteMany({ where: { id } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.voiceConversionJob.count({ where });
  }
}
