import { voiceModelKeys } from "@mixdown/jobs";
import type { Prisma, PrismaClient, VoiceModel } from "../generated/prisma/client.ts";
import type { OwnedStorage } from "./job-table.ts";
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

/**
 * What a voice model owns in storage: its folder (`voice-models/<id>/`: the model, its index, an
 * uploaded checkpoint, its cover and demo) and any key it names outside it (a native voice's
 * reference recording under `uploads/`). A built-in catalogue model's files (`models:...`, read
 * from MODELS_DIR) are not storage's and are never named.
 */
export function voiceModelStorage(
  model: Pick<VoiceModel, "id" | "fileKey" | "imageKey" | "demoKey" | "referenceKey" | "metadata">,
): OwnedStorage {
  const prefix = `${voiceModelKeys(model.id).prefix}/`;
  const meta = model.metadata && typeof model.metadata === "object" && !Array.isArray(model.metadata) ? model.metadata : {};
  const named = [model.fileKey, model.imageKey, model.demoKey, model.referenceKey, (meta as Record<string, unknown>).indexKey];
  const keys = named.filter(
    (key): key is string => typeof key === "string" && !key.startsWith(prefix) && !key.startsWith("models:"),
  );
  return { keys: [...new Set(keys)], prefixes: [prefix] };
}
