import type { VoiceConversionJobRepository, VoiceConversionJobWithModel, VoiceModelRepository } from "@mixdown/db";
import type { ObjectStorage } from "@mixdown/storage";
import type { VoiceAssets } from "@mixdown/voice/assets";
import { CONVERSION_DEFAULTS, type ConversionParams } from "@mixdown/voice/conversion-params";
import type { FastifyBaseLogger } from "fastify";
import { unprocessable } from "../../http/errors.ts";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import { StoredUploads } from "../../jobs/stored-upload.ts";
import type { RecordPresenter } from "@mixdown/records";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import type { VoiceConversionJobRecord } from "@mixdown/records";
import { checkAudioUpload } from "../../uploads/audio-check.ts";
import type { AudioFormat } from "../../uploads/audio-format.ts";
import type { ConversionForm } from "./routes.ts";
import { parseEffectChain } from "./effects.ts";
import type { UsageQuota } from "../../usage/quota.ts";

/** Voice conversion takes no webm (the interface's rule). */
export const CONVERSION_FORMATS: readonly AudioFormat[] = ["wav", "mp3", "flac"];

/**
 * What the form's schema cannot say: the effect chains inside `pre` and `post` (JSON sent as
 * text, checked against the effect catalogue); absent controls take their defaults.
 */
export function conversionParams(form: ConversionForm): ConversionParams {
  return {
    conversionStrength: form.conversionStrength ?? CONVERSION_DEFAULTS.conversionStrength,
    modelVolumeMix: form.modelVolumeMix ?? CONVERSION_DEFAULTS.modelVolumeMix,
    pitchShift: form.pitchShift ?? CONVERSION_DEFAULTS.pitchShift,
    pre: parseEffectChain("pre", form.pre),
    post: parseEffectChain("post", form.post),
  };
}

/**
 * Refuses (422) a voice model the caller cannot convert with here: not visible to them, not
 * ready, or lacking a file this server needs for it (ContentVec for RVC). Conversions and TTS jobs.
 */
export async function checkConvertibleModel(
  deps: { models: VoiceModelRepository; assets: Pick<VoiceAssets, "missingFor"> },
  callerId: number,
  voiceModelId: number,
): Promise<void> {
  const model = await deps.models.findVisible(callerId, voiceModelId);
  if (!model) throw unprocessable(`voiceModelId: voice model ${voiceModelId} does not exist or is not available to this API key`);
  if (model.state !== "ready") {
    throw unprocessable(`voiceModelId: voice model ${voiceModelId} is not usable yet (state ${model.state})`);
  }
  const missing = (await deps.assets.missingFor(model)).filter((a) => a.required);
  if (missing.length > 0)
    throw unprocessable(
      `voiceModelId: voice model ${voiceModelId} cannot be used for conversions on this server yet: ${missing.map((a) => a.message).join("; ")}`,
    );
}

export interface VoiceConversionServiceDeps {
  conversions: VoiceConversionJobRepository;
  models: VoiceModelRepository;
  /** Files RVC models need on this server: a conversion that could not run is refused at create. */
  assets: Pick<VoiceAssets, "missingFor">;
  storage: ObjectStorage;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  /** MAX_CONVERSION_SECONDS: the longest input (and backing track) a conversion takes. */
  maxSeconds: number;
  quota: UsageQuota;
}

export class VoiceConversionService extends CallerJobs<VoiceConversionJobWithModel, VoiceConversionJobRecord> {
  constructor(private readonly deps: VoiceConversionServiceDeps) {
    super({
      kind: "voice-conversion",
      noun: "voice conversion",
      rows: deps.conversions,
      present: (row) => deps.presenter.voiceConversionJob(row),
      cancels: deps.cancels,
      deletions: deps.deletions,
    });
  }

  /** A create, its form already read by the route's schema (ConversionForm). */
  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, form: ConversionForm): Promise<VoiceConversionJobRecord> {
    const { voiceModelId, soundFile: sound, backingSoundFile: backing } = form;
    const params = conversionParams(form);

    await checkConvertibleModel(this.deps, callerId, voiceModelId);

    const limit = { seconds: this.deps.maxSeconds, setting: "MAX_CONVERSION_SECONDS" };
    const { format: soundFormat, seconds } = await checkAudioUpload(sound, CONVERSION_FORMATS, limit);
    const backingFormat = backing ? (await checkAudioUpload(backing, CONVERSION_FORMATS, limit)).format : null;
    // The sound converted is what counts; a backing track is only mixed in.
    await this.deps.quota.check(apiKeyId, seconds);

    const uploads = new StoredUploads(this.deps.storage, this.deps.log);
    const row = await uploads.commit(async () => {
      const inputKey = await uploads.store("voice-conversion", sound, soundFormat);
      const backingKey = backing && backingFormat ? await uploads.store("voice-conversion", backing, backingFormat) : null;
      return this.deps.quota.admit(apiKeyId, seconds, (db) =>
        this.deps.conversions.create(
          {
            callerId,
            apiKeyId,
            webhookUrl,
            voiceModelId,
            inputKey,
            inputFormat: soundFormat,
            backingKey,
            params: { ...params },
            audioSeconds: seconds,
          },
          db,
        ),
      );
    });
    await this.deps.submitter.submit({ queue: "voice-conversion", payload: { jobId: row.id } }, () =>
      this.deps.conversions.markEnqueued(row.id),
    );
    return this.deps.presenter.voiceConversionJob(row);
  }
}
