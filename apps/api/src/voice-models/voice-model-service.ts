import type { PageRequest, VoiceModelRepository } from "@mixdown/db";
import { notFound } from "../http/errors.ts";
import type { RecordPresenter } from "../records/present.ts";
import type { VoiceModelRecord } from "../records/schemas.ts";

/** Voice models a caller can see: the public catalogue and its own. */
export class VoiceModelService {
  constructor(private readonly deps: { models: VoiceModelRepository; presenter: RecordPresenter }) {}

  async get(callerId: number, id: number): Promise<VoiceModelRecord> {
    const row = await this.deps.models.findVisible(callerId, id);
    if (!row) throw notFound(`voice model ${id} not found`);
    return this.deps.presenter.voiceModel(row);
  }

  async list(callerId: number, mine: boolean, page: PageRequest): Promise<{ rows: VoiceModelRecord[]; total: number }> {
    const { rows, total } = await this.deps.models.list(callerId, mine, page);
    return { rows: await Promise.all(rows.map((r) => this.deps.presenter.voiceModel(r))), total };
  }
}
