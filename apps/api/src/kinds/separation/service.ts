import type { SeparationJob, SeparationJobRepository } from "@mixdown/db";
import { SEPARATION_KINDS, separationKindOf, type SeparationDbKind } from "@mixdown/jobs";
import type { ObjectStorage } from "@mixdown/storage";
import type { FastifyBaseLogger } from "fastify";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import { createWithSeparationUpload } from "../../jobs/separation-upload.ts";
import type { RecordPresenter } from "@mixdown/records";
import type { SeparationJobRecord } from "@mixdown/records";
import type { SeparationForm } from "./routes.ts";
import type { InstalledSeparationModels } from "./installed-models.ts";
import type { UsageQuota } from "../../usage/quota.ts";

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
    const row = await createWithSeparationUpload(this.deps, { kind: separationKindOf(kind), input, apiKeyId }, (stored, db) =>
      this.deps.separations.create(
        { callerId, apiKeyId, webhookUrl, kind, ...stored, models, ensemble, analyze: form.analyze ?? false },
        db,
      ),
    );
    await this.deps.submitter.submit({ queue: "separation", payload: { kind: separationKindOf(kind), jobId: row.id } }, () =>
      this.deps.separations.markEnqueued(row.id),
    );
    return this.deps.presenter.separationJob(row);
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
