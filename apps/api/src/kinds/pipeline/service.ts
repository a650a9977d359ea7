import type { PipelineRepository, PipelineWithSteps, VoiceModelRepository } from "@mixdown/db";
import {
  PIPELINE_PRESETS,
  PIPELINE_STEPS,
  type JobTableKind,
  type PipelineAudio,
  type PipelinePresetName,
  type PipelineStepName,
} from "@mixdown/jobs";
import type { PipelineRecord, RecordPresenter } from "@mixdown/records";
import type { ObjectStorage } from "@mixdown/storage";
import type { VoiceAssets } from "@mixdown/voice/assets";
import type { FastifyBaseLogger } from "fastify";
import { unprocessable } from "../../http/errors.ts";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import { StoredUploads } from "../../jobs/stored-upload.ts";
import { checkAudioUpload } from "../../uploads/audio-check.ts";
import type { UsageQuota } from "../../usage/quota.ts";
import type { InstalledSeparationModels } from "../separation/installed-models.ts";
import { SEPARATION_FORMATS } from "../../jobs/separation-upload.ts";
import type { RepairModelSettings } from "../vocal-repair/service.ts";
import { CONVERSION_FORMATS } from "../voice-conversion/service.ts";
import type { PipelineForm } from "./routes.ts";
import { checkSteps, parseSteps, STEP_OPTION_NAMES } from "./steps.ts";

export interface PipelineServiceDeps {
  pipelines: PipelineRepository;
  separationModels: Pick<InstalledSeparationModels, "resolve">;
  /** The separation models a `repair`'s dereverb runs (checked installed at create, as a vocal repair's create does). */
  repairModels: RepairModelSettings;
  models: VoiceModelRepository;
  assets: Pick<VoiceAssets, "missingFor">;
  storage: ObjectStorage;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  /** MAX_SEPARATION_SECONDS (separations, vocal repairs, masterings) and MAX_CONVERSION_SECONDS: the input is held to the limit of each kind its steps run as. */
  maxSeconds: { separation: number; conversion: number };
  quota: UsageQuota;
}

/** A preset as `GET /pipeline-presets` lists it. */
export interface PresetListing {
  name: PipelinePresetName;
  description: string;
  input: PipelineAudio;
  steps: Array<{ step: PipelineStepName; options: Record<string, unknown> }>;
  requires: string[];
}

/** Pipelines: a chain of steps on one upload, each step an ordinary job the worker's pipeline job creates in turn. */
export class PipelineService extends CallerJobs<PipelineWithSteps, PipelineRecord> {
  constructor(private readonly deps: PipelineServiceDeps) {
    super({
      kind: "pipeline",
      noun: "pipeline",
      rows: deps.pipelines,
      present: (row) => deps.presenter.pipeline(row),
      cancels: deps.cancels,
      deletions: deps.deletions,
    });
  }

  /** The presets, with their steps (what `GET /pipeline-presets` answers). */
  presets(): PresetListing[] {
    return Object.entries(PIPELINE_PRESETS).map(([name, preset]) => ({
      name: name as PipelinePresetName,
      description: preset.description,
      input: preset.input,
      steps: preset.steps.map((s) => ({ step: s.step, options: { ...s.options } })),
      requires: preset.steps.some((s) => s.step === "convert") ? ["voiceModelId"] : [],
    }));
  }

  /** Checks the chain and each step's options, then the upload and the key's quota; stores the upload, writes the row and its steps, queues it. */
  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, form: PipelineForm): Promise<PipelineRecord> {
    const { input, steps } = this.#chainOf(form);
    const { separationModels, repairModels, models, assets, maxSeconds } = this.deps;
    const checked = await checkSteps({ separationModels, repairModels, models, assets }, callerId, input, steps);
    // The shortest limit of the kinds the chain runs: a conversion's own, every other kind's a separation's.
    const limit = checked
      .map((s) =>
        s.kind === "voice-conversion"
          ? { seconds: maxSeconds.conversion, setting: "MAX_CONVERSION_SECONDS" }
          : { seconds: maxSeconds.separation, setting: "MAX_SEPARATION_SECONDS" },
      )
      .reduce((shortest, l) => (l.seconds < shortest.seconds ? l : shortest));
    // The first step's kind reads the upload: a conversion takes no webm, the others what a separation takes.
    const formats = checked[0]?.kind === "voice-conversion" ? CONVERSION_FORMATS : SEPARATION_FORMATS;
    const { format, seconds } = await checkAudioUpload(form.inputFile, formats, limit);
    // Each step's job counts its own seconds once it succeeds: the quota is checked for all of them.
    const stepJobs = checked.filter((s) => s.step !== "recombine").length;
    await this.deps.quota.check(apiKeyId, seconds * stepJobs);
    const uploads = new StoredUploads(this.deps.storage, this.deps.log);
    const row = await uploads.commit(async () => {
      const inputKey = await uploads.store("pipeline", form.inputFile, format);
      return this.deps.quota.admit(apiKeyId, seconds * stepJobs, (db) =>
        this.deps.pipelines.create(
          {
            callerId,
            apiKeyId,
            webhookUrl,
            preset: form.preset ?? null,
            inputType: input,
            inputKey,
            inputFormat: format,
            inputFileName: form.inputFile.filename?.slice(0, 255) ?? null,
            audioSeconds: seconds,
            steps: checked.map((s) => ({ step: s.step, kind: s.kind, options: s.options as object })),
          },
          db,
        ),
      );
    });
    await this.deps.submitter.submit({ queue: "pipeline", payload: { jobId: row.id } }, () =>
      this.deps.pipelines.markEnqueued(row.id),
    );
    return this.deps.presenter.pipeline(row);
  }

  /** Ends the pipeline `cancelled` and cancels its running step: no later step runs. */
  override async cancel(callerId: number, id: number): Promise<PipelineRecord> {
    const cancelled = await super.cancel(callerId, id);
    await this.#cancelSteps(id);
    return (
      (await this.deps.pipelines.findForCaller(callerId, id).then((row) => row && this.deps.presenter.pipeline(row))) ?? cancelled
    );
  }

  /** Deletes the pipeline (cancelled first), then each job its steps ran as, with their files. */
  override async delete(callerId: number, id: number): Promise<void> {
    const found = await this.deps.pipelines.findForCaller(callerId, id);
    if (found?.status === "running") await this.deps.cancels.cancelRunning("pipeline", id);
    const steps = await this.deps.pipelines.stepJobs(id);
    await super.delete(callerId, id);
    for (const { kind, jobId } of steps)
      await this.deps.deletions.deleteJob(kind as JobTableKind, jobId, `${kind} ${jobId}`, async () => true);
  }

  async #cancelSteps(id: number): Promise<void> {
    for (const { kind, jobId } of await this.deps.pipelines.stepJobs(id))
      await this.deps.cancels.cancelRunning(kind as JobTableKind, jobId);
  }

  /** The steps to run: the caller's `steps`, or a preset's with `voiceModelId` filled in. */
  #chainOf(form: PipelineForm): {
    input: PipelineAudio;
    steps: Array<{ step: PipelineStepName; options: Record<string, unknown> }>;
  } {
    if (form.steps !== undefined && form.preset !== undefined) throw unprocessable("give either steps or preset, not both");
    if (form.steps !== undefined) {
      if (form.voiceModelId !== undefined)
        throw unprocessable("voiceModelId goes with a preset; with steps, give it in the convert step's options");
      return { input: (form.input ?? "mix") as PipelineAudio, steps: parseSteps(form.steps) };
    }
    if (form.preset === undefined)
      throw unprocessable(`steps or preset is required (presets: ${Object.keys(PIPELINE_PRESETS).join(", ")})`);
    const preset = PIPELINE_PRESETS[form.preset as PipelinePresetName];
    if (form.input !== undefined && form.input !== preset.input)
      throw unprocessable(`preset ${form.preset} takes a ${preset.input} (input=${form.input} was sent)`);
    const converts = preset.steps.some((s) => s.step === "convert");
    if (converts && form.voiceModelId === undefined) throw unprocessable(`voiceModelId is required by preset ${form.preset}`);
    if (!converts && form.voiceModelId !== undefined)
      throw unprocessable(`preset ${form.preset} converts nothing; voiceModelId is not taken`);
    return {
      input: preset.input,
      steps: preset.steps.map((s) => ({
        step: s.step,
        options: s.step === "convert" ? { ...s.options, voiceModelId: form.voiceModelId } : { ...s.options },
      })),
    };
  }
}

/** Every step's options by name, for the create's description. */
export function describeStepOptions(): string {
  return Object.entries(STEP_OPTION_NAMES)
    .map(
      ([step, names]) =>
        `\`${step}\`: ${names.length > 0 ? names.map((n) => `\`${n}\``).join(", ") : "no options"} (${PIPELINE_STEPS[step as PipelineStepName].description})`,
    )
    .join("; ");
}
