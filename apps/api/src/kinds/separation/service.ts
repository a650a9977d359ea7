import type { Prisma, SeparationJob, SeparationJobRepository } from "@mixdown/db";
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
import { uploadKey, type ObjectStorage } from "@mixdown/storage";
import type { FastifyBaseLogger } from "fastify";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import { SEPARATION_FORMATS } from "../../jobs/separation-upload.ts";
import { StoredUploads } from "../../jobs/stored-upload.ts";
import type { RecordPresenter } from "@mixdown/records";
import type { SeparationJobRecord } from "@mixdown/records";
import { checkAudioUpload, type CheckedAudio } from "../../uploads/audio-check.ts";
import type { ReceivedFile } from "../../uploads/receive-form.ts";
import type { SeparationForm } from "./routes.ts";
import type { InstalledSeparationModels } from "./installed-models.ts";
import type { UsageQuota } from "../../usage/quota.ts";

/** A separation create's options: its form but the file (what a batch gives every job of its). */
export type SeparationOptions = Omit<SeparationForm, "inputFile">;

/** The options as the jobs will run them (models resolved). */
export interface SeparationPlan {
  kind: SeparationDbKind;
  models: string[];
  ensemble: string | null;
  /** The create's options as its form read them (an option added to the form arrives here). */
  options: SeparationOptions;
  /** The output options asked for, resolved and checked (docs/api.md, Output control); null: today's outputs. */
  outputOptions: OutputOptions | null;
}

/** An upload that passed `checkInput`. */
export interface CheckedInput extends CheckedAudio {
  file: ReceivedFile;
}

/**
 * A link that passed the create's check (a batch's `urls`): nothing is stored at create; the job's
 * upload key is chosen here and the worker downloads the link into it before the job runs.
 */
export interface LinkedInput {
  url: string;
  /** The last part of the link's path: the job's file name, as an upload's is. */
  fileName: string | null;
}

/** The key's extension for a link's input: the link's own when it names a format a separation takes. */
function linkExtension(url: string): string {
  const ext = new URL(url).pathname.split(".").at(-1)?.toLowerCase() ?? "";
  return (SEPARATION_FORMATS as readonly string[]).includes(ext) ? ext : "audio";
}

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
  quota: UsageQuota;
  /** LOSSLESS_FORMAT: what a job's lossless files are when its create names no outputFormat. */
  losslessFormat: LosslessFormat;
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
  async create(origin: JobOrigin, kind: SeparationDbKind, form: SeparationForm): Promise<SeparationJobRecord> {
    const { inputFile, ...options } = form;
    // What the form's schema cannot say (the installed models, an ensemble's members), checked
    // before anything is stored, so a wrong name leaves nothing behind.
    const plan = await this.plan(kind, options);
    const input = { file: inputFile, ...(await this.checkInput(inputFile)) };
    await this.deps.quota.check(origin.apiKeyId, input.seconds);
    const [row] = await this.createJobs(origin, plan, [input]);
    return this.deps.presenter.separationJob(row!);
  }

  /** A create's options as its jobs will run them: the models resolved (422 when one is not installed or cannot serve the kind). */
  async plan(kind: SeparationDbKind, options: SeparationOptions): Promise<SeparationPlan> {
    const { models, ensemble } = await this.deps.models.resolve(kind, options.model, options.ensemble);
    const outputOptions = await this.#outputOptions(kind, options, { models, ensemble });
    return { kind, models, ensemble, options, outputOptions };
  }

  /** The output options a create asks for, resolved against LOSSLESS_FORMAT; a 422 naming each problem. */
  async #outputOptions(
    kind: SeparationDbKind,
    form: SeparationOptions,
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

  /** An upload's format (from its bytes) and length: 415 / 422 when it is not audio a separation takes. */
  checkInput(file: ReceivedFile): Promise<CheckedAudio> {
    return checkAudioUpload(file, SEPARATION_FORMATS, { seconds: this.deps.maxSeconds, setting: "MAX_SEPARATION_SECONDS" });
  }

  /**
   * Stores checked uploads (a link's input is the worker's to download and store, under the key
   * chosen here), writes one row each in one transaction under the key's quota and queues them; with `batch`, the batch's row is written first in the same transaction, its id
   * goes on every row and each job is queued with its priority. A failure before the commit
   * deletes what was stored and leaves no row.
   */
  async createJobs(
    { callerId, apiKeyId, webhookUrl }: JobOrigin,
    plan: SeparationPlan,
    inputs: Array<CheckedInput | LinkedInput>,
    batch?: { create(db: Prisma.TransactionClient): Promise<number>; priority(index: number): number },
  ): Promise<SeparationJob[]> {
    const { kind, models, ensemble, options, outputOptions } = plan;
    const uploads = new StoredUploads(this.deps.storage, this.deps.log);
    const inputKeys: string[] = [];
    for (const input of inputs)
      inputKeys.push(
        "url" in input
          ? uploadKey(separationKindOf(kind), linkExtension(input.url))
          : await uploads.commit(() => uploads.store(separationKindOf(kind), input.file, input.format)),
      );
    // a link's length is known once the worker has it: it counts in the key's usage then
    const seconds = inputs.reduce((sum, i) => sum + ("url" in i ? 0 : i.seconds), 0);
    const rows = await uploads.commit(() =>
      this.deps.quota.admit(apiKeyId, seconds, async (db) => {
        const batchId = batch ? await batch.create(db) : null;
        const created: SeparationJob[] = [];
        for (const [i, input] of inputs.entries()) {
          created.push(
            await this.deps.separations.create(
              {
                callerId,
                apiKeyId,
                webhookUrl,
                kind,
                inputKey: inputKeys[i]!,
                ...("url" in input
                  ? { inputFormat: linkExtension(input.url), inputFileName: input.fileName, inputUrl: input.url }
                  : { inputFormat: input.format, inputFileName: input.file.filename?.slice(0, 255) ?? null }),
                models,
                ensemble,
                analyze: options.analyze ?? false,
                ...(outputOptions ? { outputOptions: { ...outputOptions } } : {}),
                audioSeconds: "url" in input ? null : input.seconds,
                batchId,
              },
              db,
            ),
          );
        }
        return created;
      }),
    );
    for (const [i, row] of rows.entries()) {
      const added = await this.deps.submitter.submit(
        { queue: "separation", payload: { kind: separationKindOf(kind), jobId: row.id } },
        () => this.deps.separations.markEnqueued(row.id),
        batch ? { priority: batch.priority(i) } : {},
      );
      // Redis is away: the rest are left to the reconciler (their `enqueuedAt` is null), rather
      // than a batch's create waiting out the submit's timeout once per job.
      if (!added) break;
    }
    return rows;
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
