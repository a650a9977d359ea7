import type { AudioAnalysisJob, AudioAnalysisJobRepository } from "@mixdown/db";
import type { AudioAnalysisJobRecord, RecordPresenter } from "@mixdown/records";
import type { ObjectStorage } from "@mixdown/storage";
import type { FastifyBaseLogger } from "fastify";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import { createWithSeparationUpload } from "../../jobs/separation-upload.ts";
import type { UsageQuota } from "../../usage/quota.ts";
import type { AudioAnalysisForm } from "./routes.ts";

export interface AudioAnalysisServiceDeps {
  analyses: AudioAnalysisJobRepository;
  storage: ObjectStorage;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  /** MAX_SEPARATION_SECONDS: an analysis takes what a separation takes. */
  maxSeconds: number;
  quota: UsageQuota;
}

/** Audio analyses: an upload checked as a separation's is, stored, and analysed by the worker. */
export class AudioAnalysisService extends CallerJobs<AudioAnalysisJob, AudioAnalysisJobRecord> {
  constructor(private readonly deps: AudioAnalysisServiceDeps) {
    super({
      kind: "audio-analysis",
      noun: "audio analysis",
      rows: deps.analyses,
      present: (row) => deps.presenter.audioAnalysisJob(row),
      cancels: deps.cancels,
      deletions: deps.deletions,
    });
  }

  /** Checks the upload and the key's quota, stores the upload, writes the row and queues the job. */
  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, form: AudioAnalysisForm): Promise<AudioAnalysisJobRecord> {
    const row = await createWithSeparationUpload(
      this.deps,
      { kind: "audio-analysis", input: form.inputFile, apiKeyId },
      (input, db) => this.deps.analyses.create({ callerId, apiKeyId, webhookUrl, ...input }, db),
    );
    await this.deps.submitter.submit({ queue: "audio-analysis", payload: { jobId: row.id } }, () =>
      this.deps.analyses.markEnqueued(row.id),
    );
    return this.deps.presenter.audioAnalysisJob(row);
  }
}
