import type { SeparationJob, SeparationJobRepository } from "@mixdown/db";
import {
  asksForOutput,
  resolveOutputOptions,
  SEPARATION_KINDS,
  separationKindOf,
  type LosslessFormat,
  type OutputOptions,
  type OutputRequest,
  type OutputSampleFormat,
  type SeparationDbKind,
} from "@mixdown/jobs";
import { unprocessable } from "../../http/errors.ts";
import type { ObjectStorage } from "@mixdown/storage";
import type { FastifyBaseLogger } from "fastify";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import { StoredUploads } from "../../jobs/stored-upload.ts";
import type { RecordPresenter } from "@mixdown/records";
import type { SeparationJobRecord } from "@mixdown/records";
import { checkAudioUpload } from "../../uploads/audio-check.ts";
import type { AudioFormat } from "../../uploads/audio-format.ts";
import type { SeparationForm } from "./routes.ts";
import type { InstalledSeparationModels } from "./installed-models.ts";
import type { UsageQuota } from "../../usage/quota.ts";

export const SEPARATION_FORMATS: readonly AudioFormat[] = ["wav", "webm", "mp3", "flac"];

const NOUN = (kind: SeparationDbKind) => SEPARATION_KINDS[separationKindOf(kind)].noun;

export interface SeparationServiceDeps {
  separations: SeparationJobRepository;
  storage: ObjectStorage;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  models: InstalledSeparationModels;
  /** MAX_SEPARATION_SECONDS: the longest input a separation takes. */
  maxSeconds: number;
  /** LOSSLESS_FORMAT: what a job's lossless files are when its create names no outputFormat. */
  losslessFormat: LosslessFormat;
  quota: UsageQuota;
}

/** Vocal separations and stem splits: one shape, two kinds. */
export class SeparationService {
  /** Each kind's jobs of the caller's: get, list and cancel (the two kinds share the table, never their rows). */
  readonly jobs: { [K in SeparationDbKind]: CallerJobs<SeparationJob, SeparationJobRecord> };

  constructor(private readonly deps: SeparationServiceDeps) {
    this.jobs = { vocal_separation: this.#callerJobs("vocal_separation"), stem_split: this.#callerJobs("stem_split") };
  }

  /** The installed models a job may name (`GET /separation-models`). */
  listModels(): ReturnType<InstalledSeparationModels["list"]> {
    return this.deps.models.list();
  }

  /** Checks the upload and the key's quota, stores the upload, writes the row and queues the job. */
  async create(
    { callerId, apiKeyId, webhookUrl }: JobOrigin,
    kind: SeparationDbKind,
    form: SeparationForm,
  ): Promise<SeparationJobRecord> {
    const input = form.inputFile;
    // What the form's schema cannot say (the installed models, an ensemble's members), checked
    // before anything is stored, so a wrong name leaves nothing behind.
    const { models, ensemble } = await this.deps.models.resolve(kind, form.model, form.ensemble);
    const outputOptions = await this.#outputOptions(kind, form, { models, ensemble });
    const { format, seconds } = await checkAudioUpload(input, SEPARATION_FORMATS, {
      seconds: this.deps.maxSeconds,
      setting: "MAX_SEPARATION_SECONDS",
    });
    await this.deps.quota.check(apiKeyId, seconds);
    const uploads = new StoredUploads(this.deps.storage, this.deps.log);
    const inputKey = await uploads.commit(() => uploads.store(separationKindOf(kind), input, format));
    const row = await uploads.commit(() =>
      this.deps.quota.admit(apiKeyId, seconds, (db) =>
        this.deps.separations.create(
          {
            callerId,
            apiKeyId,
            webhookUrl,
            kind,
            inputKey,
            inputFormat: format,
            inputFileName: input.filename?.slice(0, 255) ?? null,
            models,
            ensemble,
            analyze: form.analyze ?? false,
            ...(outputOptions ? { outputOptions: { ...outputOptions } } : {}),
            audioSeconds: seconds,
          },
          db,
        ),
      ),
    );
    await this.deps.submitter.submit({ queue: "separation", payload: { kind: separationKindOf(kind), jobId: row.id } }, () =>
      this.deps.separations.markEnqueued(row.id),
    );
    return this.deps.presenter.separationJob(row);
  }

  /**
   * A create's output control resolved against the server's lossless format, or null when it asked
   * for none; a combination that cannot be written, or a stem the job does not publish, is a 422
   * naming them, before anything is stored.
   */
  async #outputOptions(
    kind: SeparationDbKind,
    form: SeparationForm,
    models: { models: string[]; ensemble: string | null },
  ): Promise<OutputOptions | null> {
    const request: OutputRequest = {
      ...(form.outputFormat !== undefined ? { outputFormat: form.outputFormat as LosslessFormat } : {}),
      ...(form.sampleFormat !== undefined ? { sampleFormat: form.sampleFormat as OutputSampleFormat } : {}),
      ...(form.compressionLevel !== undefined ? { compressionLevel: form.compressionLevel } : {}),
      ...(form.sampleRate !== undefined ? { sampleRate: form.sampleRate } : {}),
      ...(form.stems !== undefined ? { stems: form.stems.split(",") } : {}),
    };
    if (!asksForOutput(request)) return null;
    const resolved = resolveOutputOptions(request, this.deps.losslessFormat);
    if (resolved.problems) throw unprocessable(resolved.problems.join("; "));
    if (resolved.options.stems) await this.deps.models.checkStems(kind, models, resolved.options.stems);
    return resolved.options;
  }

  #callerJobs(kind: SeparationDbKind): CallerJobs<SeparationJob, SeparationJobRecord> {
    const { separations, presenter, cancels, deletions } = this.deps;
    return new CallerJobs({
      kind: "separation",
      noun: NOUN(kind),
      rows: {
        findForCaller: (callerId, id) => separations.findForCaller(callerId, kind, id),
        listForCaller: (callerId, page) => separations.listForCaller(callerId, kind, page),
      },
      present: (row) => presenter.separationJob(row),
      cancels,
      deletions,
    });
  }
}
