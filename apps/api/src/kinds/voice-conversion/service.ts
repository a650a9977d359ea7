import type { VoiceConversionJobRepository, VoiceConversionJobWithModel, VoiceModelRepository } from "@mixdown/db";
import type { ObjectStorage } from "@mixdown/storage";
import type { VoiceAssets } from "@mixdown/voice/assets";
import { CONVERSION_CONTROLS, type ConversionControlName, type ConversionParams } from "@mixdown/voice/conversion-params";
import type { FastifyBaseLogger } from "fastify";
import { unprocessable } from "../../http/errors.ts";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import { StoredUploads } from "../../jobs/stored-upload.ts";
import type { RecordPresenter } from "@mixdown/records";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import type { VoiceConversionJobRecord } from "@mixdown/records";
import { checkAudioUpload } from "../../uploads/audio-check.ts";
import type { AudioFormat } from "../../uploads/audio-format.ts";
import type { ReceivedForm } from "../../uploads/receive-form.ts";
import { parseEffectChain } from "./effects.ts";

/** Voice conversion takes no webm (the interface's rule). */
export const CONVERSION_FORMATS: readonly AudioFormat[] = ["wav", "mp3", "flac"];

/** A numeric control of the form, within its range (CONVERSION_CONTROLS); absent or empty is its default. */
function numberField(form: ReceivedForm, name: ConversionControlName): number {
  const { min, max, default: fallback } = CONVERSION_CONTROLS[name];
  const raw = form.fields.get(name);
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw.trim());
  if (!Number.isFinite(value))
    throw unprocessable(`${name} must be a number between ${min} and ${max} (got ${JSON.stringify(raw)})`);
  if (value < min || value > max) throw unprocessable(`${name} must be between ${min} and ${max} (got ${value})`);
  return value;
}

/** A form's `voiceModelId` as a row id; throws a 422 when it is missing or not one. */
export function parseVoiceModelId(raw: string | undefined): number {
  const rawId = raw?.trim();
  if (!rawId) throw unprocessable("voiceModelId is required");
  if (!/^\d{1,10}$/.test(rawId) || Number(rawId) < 1 || Number(rawId) > 2147483647) {
    throw unprocessable(`voiceModelId must be a positive integer (got ${JSON.stringify(rawId)})`);
  }
  return Number(rawId);
}

/** Parses the form's text parts; throws a 422 naming the first bad one. */
export function parseConversionFields(form: ReceivedForm): { voiceModelId: number; params: ConversionParams } {
  return {
    voiceModelId: parseVoiceModelId(form.fields.get("voiceModelId")),
    params: {
      conversionStrength: numberField(form, "conversionStrength"),
      modelVolumeMix: numberField(form, "modelVolumeMix"),
      pitchShift: numberField(form, "pitchShift"),
      pre: parseEffectChain("pre", form.fields.get("pre")),
      post: parseEffectChain("post", form.fields.get("post")),
    },
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
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  /** MAX_CONVERSION_SECONDS: the longest input (and backing track) a conversion takes. */
  maxSeconds: number;
}

export class VoiceConversionService extends CallerJobs<VoiceConversionJobWithModel, VoiceConversionJobRecord> {
  constructor(private readonly deps: VoiceConversionServiceDeps) {
    super({
      kind: "voice-conversion",
      noun: "voice conversion",
      rows: deps.conversions,
      present: (row) => deps.presenter.voiceConversionJob(row),
      cancels: deps.cancels,
    });
  }

  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, form: ReceivedForm): Promise<VoiceConversionJobRecord> {
    const { voiceModelId, params } = parseConversionFields(form);
    const sound = form.files.get("soundFile");
    if (!sound) throw unprocessable("soundFile is required (a wav, mp3 or flac file part)");
    const backing = form.files.get("backingSoundFile");

    await checkConvertibleModel(this.deps, callerId, voiceModelId);

    const limit = { seconds: this.deps.maxSeconds, setting: "MAX_CONVERSION_SECONDS" };
    const soundFormat = await checkAudioUpload(sound, CONVERSION_FORMATS, limit);
    const backingFormat = backing ? await checkAudioUpload(backing, CONVERSION_FORMATS, limit) : null;

    const uploads = new StoredUploads(this.deps.storage, this.deps.log);
    const row = await uploads.commit(async () => {
      const inputKey = await uploads.store("voice-conversion", sound, soundFormat);
      const backingKey = backing && backingFormat ? await uploads.store("voice-conversion", backing, backingFormat) : null;
      return this.deps.conversions.create({
        callerId,
        apiKeyId,
        webhookUrl,
        voiceModelId,
        inputKey,
        inputFormat: soundFormat,
        backingKey,
        params: { ...params },
      });
    });
    await this.deps.submitter.submit({ queue: "voice-conversion", payload: { jobId: row.id } }, () =>
      this.deps.conversions.markEnqueued(row.id),
    );
    return this.deps.presenter.voiceConversionJob(row);
  }
}
