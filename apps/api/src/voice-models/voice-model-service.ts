import type { PageRequest, VoiceModelRepository } from "@mixdown/db";
import { conflict, notFound } from "../http/errors.ts";
import type { RecordPresenter } from "@mixdown/records";
import type { VoiceModelRecord } from "@mixdown/records";
import type { CallerDeletions } from "../jobs/caller-deletions.ts";

/** Voice models a caller can see: the public catalogue and its own. */
export class VoiceModelService {
  constructor(private readonly deps: { models: VoiceModelRepository; presenter: RecordPresenter; deletions: CallerDeletions }) {}

  /**
   * Deletes the caller's own model with its files, the blend job that made it and the ended jobs
   * that used it (`ResourceDeletions.deleteVoiceModel`); 404 for a public or another caller's
   * model, 409 while a running job uses it.
   */
  async delete(callerId: number, id: number): Promise<void> {
    await this.deps.deletions.deleteVoiceModel(
      callerId,
      id,
      async (modelId) => (await this.deps.models.findById(modelId))?.ownerId,
    );
  }

  async get(callerId: number, id: number): Promise<VoiceModelRecord> {
    const row = await this.deps.models.findVisible(callerId, id);
    if (!row) throw notFound(`voice model ${id} not found`);
    return this.deps.presenter.voiceModel(row);
  }

  /**
   * Where a model's image or demo is right now (for the stable media routes): 404 when it will
   * never exist (the model failed, or its media could not be rendered), 409 while the worker has
   * not rendered it yet.
   */
  async mediaLocation(callerId: number, id: number, media: "image" | "demo"): Promise<string> {
    const row = await this.deps.models.findVisible(callerId, id);
    if (!row) throw notFound(`voice model ${id} not found`);
    const present = media === "image" ? (row.imageUrl ?? row.imageKey) : (row.demoUrl ?? row.demoKey);
    if (present) return this.deps.presenter.voiceModelMedia(row, media);
    if (row.state === "failed") throw notFound(`voice model ${id} failed; it has no ${media}`);
    if (row.mediaError) throw notFound(`the ${media} of voice model ${id} could not be rendered: ${row.mediaError}`);
    const why = row.state === "pending" ? "the model is not ready yet" : "the worker is rendering it";
    throw conflict(`the ${media} of voice model ${id} does not exist yet (${why}); try again in a few seconds`, {
      "retry-after": "5",
    });
  }

  async list(
    callerId: number,
    mine: boolean,
    page: PageRequest,
    instruments?: boolean,
  ): Promise<{ rows: VoiceModelRecord[]; total: number }> {
    const { rows, total } = await this.deps.models.list(callerId, mine, page, instruments);
    return { rows: await Promise.all(rows.map((r) => this.deps.presenter.voiceModel(r))), total };
  }
}
