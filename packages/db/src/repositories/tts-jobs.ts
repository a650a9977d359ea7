import type { PrismaClient, TtsJob, VoiceModel } from "../generated/prisma/client.ts";
import { poolOf } from "../client.ts";
import { readCallerPageWithVoiceModels, type Page, type PageRequest } from "./paging.ts";

export interface NewTtsJob {
  callerId: number;
  voiceModelId: number;
  inputText: string;
  /** The language asked for (checked); null or absent: the default, English. */
  language?: string | null;
  /** Where the job's end is POSTed (null: nowhere), and the key whose secret signs it. */
  webhookUrl?: string | null;
  apiKeyId?: number | null;
}

export type TtsJobWithModel = TtsJob & { voiceModel: VoiceModel };

/** Text-to-speech rows; reads include the voice model that speaks. */
export class TtsJobRepository {
  constructor(private readonly prisma: PrismaClient) {}

  create(input: NewTtsJob): Promise<TtsJobWithModel> {
    return this.prisma.ttsJob.create({ data: { ...input, status: "running" }, include: { voiceModel: true } });
  }

  async findForCaller(callerId: number, id: number): Promise<TtsJobWithModel | null> {
    const row = await this.findById(id);
    return row?.callerId === callerId ? row : null;
  }

  findById(id: number): Promise<TtsJobWithModel | null> {
    return this.prisma.ttsJob.findUnique({ where: { id }, include: { voiceModel: true } });
  }

  listForCaller(callerId: number, page: PageRequest): Promise<Page<TtsJobWithModel>> {
    return readCallerPageWithVoiceModels<TtsJob, VoiceModel>(poolOf(this.prisma), "TtsJob", callerId, page);
  }

  async markEnqueued(id: number): Promise<void> {
    await this.prisma.ttsJob.updateMany({ where: { id, enqueuedAt: null }, data: { enqueuedAt: new Date() } });
  }

  count(where: { callerId?: number } = {}): Promise<number> {
    return this.prisma.ttsJob.count({ where });
  }
}
