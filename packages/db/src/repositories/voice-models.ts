import type { Prisma, PrismaClient, VoiceModel } from "../generated/prisma/client.ts";
import { pageArgs, type Page, type PageRequest } from "./paging.ts";

/** A model is visible to a caller when it is public (no owner) or the caller's own. */
function visibleTo(callerId: number): Prisma.VoiceModelWhereInput {
  return { OR: [{ ownerId: null }, { ownerId: callerId }] };
}

export type NewVoiceModel = Omit<Prisma.VoiceModelUncheckedCreateInput, "id" | "createdAt">;

/** Voice models: the public catalogue (ownerId null) and callers' private models. */
export class VoiceModelRepository {
  constructor(private readonly prisma: PrismaClient) {}

  create(input: NewVoiceModel): Promise<VoiceModel> {
    return this.prisma.voiceModel.create({ data: input });
  }

  findById(id: number): Promise<VoiceModel | null> {
    return this.prisma.voiceModel.findUnique({ where: { id } });
  }

  /** The model when `callerId` may see it, else null. */
  findVisible(callerId: number, id: number): Promise<VoiceModel | null> {
    return this.prisma.voiceModel.findFirst({ where: { id, ...visibleTo(callerId) } });
  }

  /** The visible models among `ids` (missing and foreign ones are left out). */
  findManyVisible(callerId: number, ids: number[]): Promise<VoiceModel[]> {
    return this.prisma.voiceModel.findMany({ where: { id: { in: ids }, ...visibleTo(callerId) } });
  }

  /**
   * `mine`: only the caller's own models; otherwise the public catalogue plus the caller's own.
   * `instruments`: true only instrument models, false only voices, undefined both.
   */
  async list(callerId: number, mine: boolean, page: PageRequest, instruments?: boolean): Promise<Page<VoiceModel>> {
    const where: Prisma.VoiceModelWhereInput = {
      ...(mine ? { ownerId: callerId } : visibleTo(callerId)),
      ...(instruments === undefined ? {} : { instrument: instruments }),
    };
    const [rows, total] = await Promise.all([
      this.prisma.voiceModel.findMany({ where, ...pageArgs(page) }),
      this.prisma.voiceModel.count({ where }),
    ]);
    return { rows, total };
  }

  count(where: Prisma.VoiceModelWhereInput = {}): Promise<number> {
    return this.prisma.voiceModel.count({ where });
  }
}
