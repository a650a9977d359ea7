import type { VoiceBlendJob, VoiceBlendJobRepository, VoiceModel, VoiceModelRepository } from "@mixdown/db";
import { unprocessable } from "../../http/errors.ts";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import type { RecordPresenter } from "@mixdown/records";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import type { VoiceBlendJobRecord } from "@mixdown/records";

export interface BlendRequest {
  modelId1: number;
  modelId2: number;
  modelId3?: number;
  modelId4?: number;
  alpha: number;
  alpha2?: number;
  alpha3?: number;
  title?: string;
}

/** Below this, a negative remainder is floating-point noise (0.7 + 0.3 > 1 by 1e-16). */
const EPSILON = 1e-9;
const round = (x: number) => Math.round(x * 1e10) / 1e10;

/**
 * The interface's rules 1-3: two to four models; one alpha fewer than models (alpha with 2,
 * alpha + alpha2 with 3, alpha + alpha2 + alpha3 with 4); the last share is 1 minus the sum and
 * must not be negative. Returns model ids and all shares in order.
 */
export function planBlend(body: BlendRequest): { modelIds: number[]; alphas: number[] } {
  if (body.modelId4 !== undefined && body.modelId3 === undefined) {
    throw unprocessable("modelId4 requires modelId3: models are given in order");
  }
  const modelIds = [body.modelId1, body.modelId2, body.modelId3, body.modelId4].filter((m): m is number => m !== undefined);
  const n = modelIds.length;
  const suppliedNames = ["alpha", "alpha2", "alpha3"] as const;
  const expected = suppliedNames.slice(0, n - 1);
  for (const name of expected) {
    if (body[name] === undefined) {
      throw unprocessable(`${name} is required with ${n} models (give ${expected.join(", ")}; the last share is computed)`);
    }
  }
  for (const name of suppliedNames.slice(n - 1)) {
    if (body[name] !== undefined) {
      throw unprocessable(
        `${name} must not be given with ${n} models: the last share (${name}) is computed as 1 minus ${expected.join(" + ")}`,
      );
    }
  }
  const supplied = expected.map((name) => body[name] as number);
  const sum = supplied.reduce((a, b) => a + b, 0);
  const last = 1 - sum;
  if (last < -EPSILON) {
    throw unprocessable(
      `${expected.join(" + ")} = ${round(sum)} exceeds 1: the computed alpha${n} (1 minus their sum) would be negative`,
    );
  }
  return { modelIds, alphas: [...supplied, round(Math.max(0, last))] };
}

function defaultTitle(models: VoiceModel[]): string {
  const titles = models.map((m) => m.title);
  const title = `Blend of ${titles.slice(0, -1).join(", ")} and ${titles.at(-1)}`;
  return title.length > 200 ? `${title.slice(0, 197)}...` : title;
}

export interface VoiceBlendServiceDeps {
  blends: VoiceBlendJobRepository;
  models: VoiceModelRepository;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
}

export class VoiceBlendService extends CallerJobs<VoiceBlendJob, VoiceBlendJobRecord> {
  constructor(private readonly deps: VoiceBlendServiceDeps) {
    super({
      kind: "voice-blend",
      noun: "voice blender job",
      rows: deps.blends,
      present: (row) => deps.presenter.voiceBlendJob(row),
      cancels: deps.cancels,
      deletions: deps.deletions,
    });
  }

  /**
   * Checks the rules and the models (visible to the caller, usable, one architecture and sample
   * rate), then creates the output model (`pending`) and the job in one transaction and queues it.
   */
  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, body: BlendRequest): Promise<VoiceBlendJobRecord> {
    const { modelIds, alphas } = planBlend(body);
    const found = await this.deps.models.findManyVisible(callerId, [...new Set(modelIds)]);
    const byId = new Map(found.map((m) => [m.id, m]));
    const models: VoiceModel[] = [];
    modelIds.forEach((id, i) => {
      const field = `modelId${i + 1}`;
      const model = byId.get(id);
      if (!model) throw unprocessable(`${field}: voice model ${id} does not exist or is not available to this API key`);
      if (model.state !== "ready") throw unprocessable(`${field}: voice model ${id} is not usable yet (state ${model.state})`);
      models.push(model);
    });
    const first = models[0]!;
    models.forEach((model, i) => {
      if (i === 0) return;
      const field = `modelId${i + 1}`;
      if (model.architecture !== first.architecture) {
        throw unprocessable(
          `${field}: voice model ${model.id} is a ${model.architecture} model but modelId1 (${first.id}) is ${first.architecture}; blended models must share one architecture`,
        );
      }
      if (model.sampleRate !== first.sampleRate) {
        throw unprocessable(
          `${field}: voice model ${model.id} runs at ${model.sampleRate} Hz but modelId1 (${first.id}) at ${first.sampleRate} Hz; blended models must share one sample rate`,
        );
      }
    });
    const title = body.title?.trim() || defaultTitle(models);
    const { job } = await this.deps.blends.create({
      callerId,
      apiKeyId,
      webhookUrl,
      modelIds,
      alphas,
      title,
      architecture: first.architecture,
      sampleRate: first.sampleRate,
      // A blend of instruments is an instrument; a blend with any voice in it is a voice.
      instrument: models.every((m) => m.instrument === true),
    });
    await this.deps.submitter.submit({ queue: "voice-blend", payload: { jobId: job.id } }, () =>
      this.deps.blends.markEnqueued(job.id),
    );
    return this.deps.presenter.voiceBlendJob(job);
  }
}
