import type {
  AudioAnalysisJob,
  BatchWithJobs,
  HarmonyJob,
  MasteringJob,
  PipelineWithSteps,
  SeparationJob,
  StoredStem,
  TtsJobWithModel,
  VoiceBlendJob,
  VoiceConversionJobWithModel,
  VocalRepairJob,
  VoiceModel,
} from "@mixdown/db";
import {
  isHarmonyDirection,
  isHarmonyInterval,
  isVocalRepairStep,
  SEPARATION_KINDS,
  separationKindOf,
  type JobRecordType,
} from "@mixdown/jobs";
import type { ObjectStorage } from "@mixdown/storage";
import type { Static } from "typebox";
import type {
  AudioAnalysisJobRecord,
  BatchRecord,
  AudioAnalysisResult,
  HarmonyJobRecord,
  MasteringJobRecord,
  MissingVoiceAsset,
  PipelineRecord,
  SeparationAnalysis,
  SeparationJobRecord,
  TtsJobRecord,
  VocalRepairJobRecord,
  VoiceBlendJobRecord,
  VoiceConversionJobRecord,
  VoiceModelRecord,
} from "./schemas.ts";
import { formatTimestamp } from "./timestamps.ts";

/** The API path of the kinds a pipeline's steps run as. */
const STEP_JOB_PATHS: Record<string, string> = {
  separation: SEPARATION_KINDS["vocal-separation"].apiPath,
  "vocal-repair": "vocal-repairs",
  "voice-conversion": "voice-conversions",
  mastering: "masterings",
};

function storedStems(value: unknown): StoredStem[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (s): s is StoredStem => typeof s === "object" && s !== null && typeof s.instrument === "string" && typeof s.key === "string",
  );
}

/** Which files a voice model still needs on this server (`@mixdown/voice/assets`' VoiceAssets.missingFor). */
export type VoiceAssetCheck = (row: VoiceModel) => Promise<Static<typeof MissingVoiceAsset>[]>;

/** The row each public record type of the job catalogue is presented from. */
export interface RecordRows {
  separationJob: SeparationJob;
  voiceConversionJob: VoiceConversionJobWithModel;
  voiceBlendJob: VoiceBlendJob;
  ttsJob: TtsJobWithModel;
  audioAnalysisJob: AudioAnalysisJob;
  vocalRepairJob: VocalRepairJob;
  masteringJob: MasteringJob;
  harmonyJob: HarmonyJob;
  pipeline: PipelineWithSteps;
  voiceModel: VoiceModel;
}
/** A presenter per record type the catalogue names (`JobKindEntry.record`): a record type without one does not compile. */
type PresenterMap = { [R in JobRecordType]: (row: RecordRows[R]) => unknown };

/**
 * Turns rows into the interface's records. Rows hold storage keys, never URLs: download URLs
 * are signed here, at read time, so they are always fresh.
 */
export interface PresenterOptions {
  /** How long a signed download URL stays valid (SIGNED_URL_TTL_SECONDS). */
  ttlSeconds: number;
  /** Absolute base of the API's own routes (`https://host/api/kits/v1`), for stable media links. */
  apiBaseUrl: string;
  /** What a voice model still needs on this server (`missingAssets`); none when not given. */
  missingAssets?: VoiceAssetCheck;
  /** RETENTION_OUTPUT_MINUTES: when an ended job's outputs are deleted (0: never), for `outputsExpireAt`. */
  outputRetentionMinutes?: number;
}

/**
 * Turns rows into the interface's records. Rows hold storage keys, never URLs: download URLs
 * are signed here, at read time, so they are always fresh.
 */
export class RecordPresenter {
  private readonly ttlSeconds: number;
  private readonly apiBaseUrl: string;
  private readonly missingAssets: VoiceAssetCheck;
  private readonly outputRetentionMs: number;

  constructor(
    private readonly storage: ObjectStorage,
    options: PresenterOptions,
  ) {
    this.ttlSeconds = options.ttlSeconds;
    this.apiBaseUrl = options.apiBaseUrl;
    this.missingAssets = options.missingAssets ?? (async () => []);
    this.outputRetentionMs = (options.outputRetentionMinutes ?? 0) * 60_000;
  }

  /**
   * A job's `outputsExpireAt` and `outputsExpiredAt`: once swept, both say when; before, the
   * first says when the sweep will take them (its end plus the retention), null while it runs or
   * when outputs are kept for good.
   */
  private outputRetention(row: { jobEndTime: Date | null; outputsExpiredAt: Date | null }) {
    const due =
      row.outputsExpiredAt ??
      (row.jobEndTime && this.outputRetentionMs > 0 ? new Date(row.jobEndTime.getTime() + this.outputRetentionMs) : null);
    return { outputsExpireAt: formatTimestamp(due), outputsExpiredAt: formatTimestamp(row.outputsExpiredAt) };
  }

  private url(key: string | null | undefined): Promise<string | null> {
    return key ? this.storage.signedUrl(key, this.ttlSeconds) : Promise.resolve(null);
  }

  /** Catalogue fields may hold an absolute URL (kept) or a storage key (signed). */
  private link(value: string | null): Promise<string | null> {
    if (!value) return Promise.resolve(null);
    return /^https?:\/\//i.test(value) ? Promise.resolve(value) : this.url(value);
  }

  private stems(value: unknown) {
    return Promise.all(storedStems(value).map(async (s) => ({ instrument: s.instrument, url: (await this.url(s.key))! })));
  }

  /** A batch, its jobs' state summed up; `zipUrl` (the API's own route, bearer-authenticated) once all have ended. */
  batch(row: BatchWithJobs): BatchRecord {
    const counts = { running: 0, success: 0, error: 0, cancelled: 0 };
    for (const job of row.jobs) counts[job.status]++;
    const ended = counts.running === 0;
    const status = !ended ? "running" : counts.error > 0 ? "error" : counts.cancelled > 0 ? "cancelled" : "success";
    const progress =
      row.jobs.length === 0
        ? 100
        : row.jobs.reduce((sum, j) => sum + (j.status === "running" ? j.progress : 100), 0) / row.jobs.length;
    const ends = row.jobs.map((j) => j.jobEndTime?.getTime() ?? 0);
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      kind: separationKindOf(row.kind),
      status,
      progress: Math.floor(progress),
      total: row.jobs.length,
      counts,
      jobEndTime: ended && row.jobs.length > 0 ? formatTimestamp(new Date(Math.max(...ends))) : null,
      jobs: row.jobs.map((j) => ({
        id: j.id,
        fileName: j.inputFileName,
        status: j.status,
        progress: j.status === "success" ? 100 : j.progress,
        errorMessage: j.errorMessage,
      })),
      rejected: Array.isArray(row.rejected) ? (row.rejected as BatchRecord["rejected"]) : [],
      zipUrl: ended && counts.success > 0 ? `${this.apiBaseUrl}/batches/${row.id}/zip` : null,
    };
  }

  async separationJob(row: SeparationJob): Promise<SeparationJobRecord> {
    const [vocal, lossyVocal, backing, stems, lossyStems] = await Promise.all([
      this.url(row.vocalKey),
      this.url(row.lossyVocalKey),
      this.url(row.backingKey),
      this.stems(row.stems),
      this.stems(row.lossyStems),
    ]);
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      type: "separate",
      status: row.status,
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      vocalAudioFileUrl: vocal,
      lossyVocalAudioFileUrl: lossyVocal,
      backingAudioFileUrl: backing,
      stemFileUrls: stems,
      lossyStemFileUrls: lossyStems,
      // the record keeps the interface's one string: the names comma-separated, null for none yet
      model: row.models.length > 0 ? row.models.join(",") : null,
      ensemble: row.ensemble,
      // only a job that asked for it has the key: Kits clients see the records they always saw
      ...(row.analyze ? { analysis: (row.analysis as SeparationAnalysis | null) ?? null } : {}),
      // likewise output control: only a job created with an option says what it wrote
      ...(row.outputOptions !== null ? { output: (row.output as SeparationJobRecord["output"]) ?? null } : {}),
      // and a job made from a link says which
      ...(row.inputUrl !== null ? { inputUrl: row.inputUrl } : {}),
      progress: row.progress,
      errorMessage: row.errorMessage,
      ...this.outputRetention(row),
    };
  }

  /**
   * A voice model's image or demo: the owner's own link when given at import, else the rendered
   * object's signed URL, else (not rendered yet) the API's stable media route, which redirects
   * to the object once it exists. Always a URL, as typed clients expect.
   */
  async voiceModelMedia(row: VoiceModel, media: "image" | "demo"): Promise<string> {
    const [ownerLink, key] = media === "image" ? [row.imageUrl, row.imageKey] : [row.demoUrl, row.demoKey];
    return (await this.link(ownerLink)) ?? (await this.url(key)) ?? `${this.apiBaseUrl}/voice-models/${row.id}/${media}`;
  }

  async voiceModel(row: VoiceModel): Promise<VoiceModelRecord> {
    const [imageUrl, demoUrl, missingAssets] = await Promise.all([
      this.voiceModelMedia(row, "image"),
      this.voiceModelMedia(row, "demo"),
      this.missingAssets(row),
    ]);
    return {
      id: row.id,
      title: row.title,
      tags: row.tags,
      imageUrl,
      demoUrl,
      twitterLink: row.twitterLink,
      instagramLink: row.instagramLink,
      tiktokLink: row.tiktokLink,
      spotifyLink: row.spotifyLink,
      youtubeLink: row.youtubeLink,
      architecture: row.architecture,
      sampleRate: row.sampleRate,
      state: row.state,
      usable: row.state === "ready",
      isUsable: row.state === "ready",
      instrument: row.instrument,
      errorMessage: row.state === "failed" ? row.buildError : null,
      public: row.ownerId === null,
      createdAt: formatTimestamp(row.createdAt),
      missingAssets,
    };
  }

  async voiceConversionJob(row: VoiceConversionJobWithModel): Promise<VoiceConversionJobRecord> {
    const [output, lossy, recombined, model] = await Promise.all([
      this.url(row.outputKey),
      this.url(row.lossyOutputKey),
      this.url(row.recombinedKey),
      this.voiceModel(row.voiceModel),
    ]);
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      type: "infer",
      voiceModelId: row.voiceModelId,
      status: row.status,
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      outputFileUrl: output,
      lossyOutputFileUrl: lossy,
      recombinedAudioFileUrl: recombined,
      model,
      progress: row.progress,
      errorMessage: row.errorMessage,
      ...this.outputRetention(row),
    };
  }

  async ttsJob(row: TtsJobWithModel): Promise<TtsJobRecord> {
    const [output, lossy, model] = await Promise.all([
      this.url(row.outputKey),
      this.url(row.lossyOutputKey),
      this.voiceModel(row.voiceModel),
    ]);
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      type: "tts",
      voiceModelId: row.voiceModelId,
      status: row.status,
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      outputFileUrl: output,
      lossyOutputFileUrl: lossy,
      model,
      inputTtsText: row.inputText,
      language: row.language,
      synthesizer: row.synthesizer,
      progress: row.progress,
      errorMessage: row.errorMessage,
      ...this.outputRetention(row),
    };
  }

  audioAnalysisJob(row: AudioAnalysisJob): AudioAnalysisJobRecord {
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      type: "analyze",
      status: row.status,
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      inputFileName: row.inputFileName,
      // written by the worker from `@mixdown/analysis`' AudioAnalysis, which has the record's shape
      analysis: (row.analysis as AudioAnalysisResult | null) ?? null,
      analyzer: row.analyzer,
      progress: row.progress,
      errorMessage: row.errorMessage,
    };
  }

  async vocalRepairJob(row: VocalRepairJob): Promise<VocalRepairJobRecord> {
    const [output, lossy] = await Promise.all([this.url(row.outputKey), this.url(row.lossyOutputKey)]);
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      type: "repair",
      status: row.status,
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      inputFileName: row.inputFileName,
      // written by the API from VOCAL_REPAIR_STEPS (parseVocalRepairSteps)
      steps: row.steps.filter(isVocalRepairStep),
      isolateVocal: row.isolateVocal,
      models: row.models,
      outputFileUrl: output,
      lossyOutputFileUrl: lossy,
      progress: row.progress,
      errorMessage: row.errorMessage,
      ...this.outputRetention(row),
    };
  }

  async masteringJob(row: MasteringJob): Promise<MasteringJobRecord> {
    const [input, output, output16, lossy] = await Promise.all([
      row.inputsExpiredAt ? null : this.url(row.inputKey),
      this.url(row.outputKey),
      this.url(row.output16BitKey),
      this.url(row.lossyOutputKey),
    ]);
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      type: "master",
      mode: row.referenceKey ? "reference" : "loudness",
      status: row.status,
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      inputFileName: row.inputFileName,
      inputFileUrl: input,
      referenceFileName: row.referenceFileName,
      targetLufs: row.targetLufs,
      truePeakDb: row.truePeakDb,
      outputFileUrl: output,
      output16BitFileUrl: output16,
      lossyOutputFileUrl: lossy,
      // written by the worker from `@mixdown/analysis`' Loudness, which has the record's shape
      loudnessBefore: (row.loudnessBefore as MasteringJobRecord["loudnessBefore"]) ?? null,
      loudnessAfter: (row.loudnessAfter as MasteringJobRecord["loudnessAfter"]) ?? null,
      processor: row.processor,
      progress: row.progress,
      errorMessage: row.errorMessage,
      ...this.outputRetention(row),
    };
  }

  async harmonyJob(row: HarmonyJob): Promise<HarmonyJobRecord> {
    const [input, harmony, lossyHarmony, mix, lossyMix] = await Promise.all([
      row.inputsExpiredAt ? null : this.url(row.inputKey),
      this.url(row.harmonyKey),
      this.url(row.lossyHarmonyKey),
      this.url(row.mixKey),
      this.url(row.lossyMixKey),
    ]);
    // written by the API from HARMONY_INTERVALS and HARMONY_DIRECTIONS (a check constraint holds them too)
    if (!isHarmonyInterval(row.interval) || !isHarmonyDirection(row.direction))
      throw new Error(`harmony ${row.id} has interval ${row.interval} and direction ${row.direction}`);
    const key = row.key ?? row.requestedKey;
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      type: "harmony",
      status: row.status,
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      inputFileName: row.inputFileName,
      inputFileUrl: input,
      interval: row.interval,
      direction: row.direction,
      key,
      keySource: row.requestedKey ? "given" : key ? "found" : null,
      keyConfidence: row.requestedKey ? null : row.keyConfidence,
      isolateVocal: row.isolateVocal,
      notes: row.notes,
      models: row.models,
      harmonyFileUrl: harmony,
      lossyHarmonyFileUrl: lossyHarmony,
      mixFileUrl: mix,
      lossyMixFileUrl: lossyMix,
      progress: row.progress,
      errorMessage: row.errorMessage,
      ...this.outputRetention(row),
    };
  }

  async pipeline(row: PipelineWithSteps): Promise<PipelineRecord> {
    const input = row.inputsExpiredAt ? null : await this.url(row.inputKey);
    return {
      id: row.id,
      createdAt: formatTimestamp(row.createdAt),
      type: "pipeline",
      status: row.status,
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      preset: row.preset,
      input: row.inputType === "vocal" ? "vocal" : "mix",
      inputFileName: row.inputFileName,
      inputFileUrl: input,
      steps: row.steps.map((s) => ({
        index: s.index,
        step: s.step,
        options: (s.options ?? {}) as Record<string, unknown>,
        status: s.job?.status ?? "pending",
        progress: s.job?.progress ?? 0,
        errorMessage: s.job?.errorMessage ?? null,
        jobKind: STEP_JOB_PATHS[s.kind] ?? s.kind,
        jobId: s.jobId,
      })),
      progress: row.progress,
      errorMessage: row.errorMessage,
    };
  }

  voiceBlendJob(row: VoiceBlendJob): VoiceBlendJobRecord {
    return {
      id: row.id,
      model1Id: row.model1Id,
      model2Id: row.model2Id,
      ...(row.model3Id !== null ? { model3Id: row.model3Id } : {}),
      ...(row.model4Id !== null ? { model4Id: row.model4Id } : {}),
      alpha: row.alpha,
      alpha2: row.alpha2,
      ...(row.alpha3 !== null ? { alpha3: row.alpha3 } : {}),
      ...(row.alpha4 !== null ? { alpha4: row.alpha4 } : {}),
      status: row.status,
      outputModelId: row.outputModelId,
      title: row.title,
      createdAt: formatTimestamp(row.createdAt),
      jobStartTime: formatTimestamp(row.jobStartTime),
      jobEndTime: formatTimestamp(row.jobEndTime),
      progress: row.progress,
      errorMessage: row.errorMessage,
    };
  }

  /** The public record of any job kind's row, by the record type its catalogue entry names (webhooks send this). */
  present<R extends JobRecordType>(type: R, row: RecordRows[R]): Promise<unknown> {
    const presenters: PresenterMap = this;
    return Promise.resolve((presenters[type] as (row: RecordRows[R]) => unknown).call(this, row));
  }
}
