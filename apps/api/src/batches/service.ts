import type { BatchRepository, BatchWithJobs, PageRequest, RejectedFile } from "@mixdown/db";
import { SEPARATION_KINDS, type SeparationKind } from "@mixdown/jobs";
import type { BatchRecord, RecordPresenter } from "@mixdown/records";
import { ApiError, conflict, notFound, unprocessable } from "../http/errors.ts";
import type { CallerDeletions } from "../jobs/caller-deletions.ts";
import type { JobCancels } from "../jobs/job-cancels.ts";
import type { JobOrigin } from "../jobs/job-origin.ts";
import type { CheckedInput, LinkedInput, SeparationOptions, SeparationService } from "../kinds/separation/service.ts";
import type { UsageQuota } from "../usage/quota.ts";
import { checkDownloadLink } from "../uploads/download-link.ts";
import type { ReceivedFile } from "../uploads/receive-form.ts";
import { MAX_WEBHOOK_URL_LENGTH, type WebhookAddressPolicy } from "@mixdown/webhooks";

export interface BatchServiceDeps {
  batches: BatchRepository;
  /** The separation kinds' own service: a batch's options are planned, its files checked and its jobs created by it. */
  separations: SeparationService;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  quota: UsageQuota;
  /** MAX_CALLER_JOBS_IN_FLIGHT */
  maxJobsInFlight: number;
  /** WEBHOOK_DENIED_NETWORKS: the addresses a batch's link may not lead to (checked as a voice model's `modelUrl`). */
  linkPolicy: WebhookAddressPolicy;
}

/** A link's file name: the last part of its path, decoded (its host when the path names none). */
function fileNameOfLink(url: string): string {
  const { pathname, hostname } = new URL(url);
  const last = pathname.split("/").filter(Boolean).at(-1) ?? "";
  let name = last;
  try {
    name = decodeURIComponent(last);
  } catch {
    // a malformed escape: the name as written
  }
  return (name || hostname).slice(0, 255);
}

/**
 * Batches: one create that makes an ordinary separation job per file. Everything a job is (its
 * checks, its row, its queue entry, its webhook) is the separation kind's own create path
 * (`SeparationService.plan`, `checkInput`, `createJobs`); the batch adds the row naming them,
 * the files it refused, and the jobs' queue priorities (their turn among other callers').
 */
export class BatchService {
  constructor(private readonly deps: BatchServiceDeps) {}

  /**
   * Plans the options once (a wrong one is the whole create's 422), checks each file as its own
   * create would (a file that is not audio is `rejected`, with the 4xx's words) and each link as a
   * `modelUrl` is (a refused one is `rejected` likewise; a link's file is the worker's to download
   * and judge, failing its own job), then writes the batch and a job per accepted file and link
   * (files first) in one transaction. Nothing is stored when nothing is accepted,
   * when the caller would have more than MAX_CALLER_JOBS_IN_FLIGHT running jobs, or over the quota.
   */
  async create(
    origin: JobOrigin,
    kind: SeparationKind,
    options: SeparationOptions,
    files: ReceivedFile[],
    links: string[] = [],
  ): Promise<BatchRecord> {
    if (files.length === 0 && links.length === 0) {
      throw unprocessable(
        "files is required: one file part `files` per audio file of the batch (or one `zip` part holding them), or one `urls` field per link",
      );
    }
    const dbKind = SEPARATION_KINDS[kind].dbKind;
    const { separations, batches, quota } = this.deps;
    const plan = await separations.plan(dbKind, options);
    const accepted: Array<CheckedInput | LinkedInput> = [];
    const rejected: RejectedFile[] = [];
    const refused = (error: unknown, fileName: string | null) => {
      if (!(error instanceof ApiError) || error.statusCode >= 500) throw error;
      rejected.push({ fileName, reason: error.message });
    };
    for (const file of files) {
      try {
        accepted.push({ file, ...(await separations.checkInput(file)) });
      } catch (error) {
        refused(error, file.filename?.slice(0, 255) ?? null);
      }
    }
    // A link is checked as a voice model's `modelUrl` is; whether it is audio is the worker's to find.
    for (const link of links) {
      try {
        const url = checkDownloadLink("urls", link, this.deps.linkPolicy)!;
        accepted.push({ url, fileName: fileNameOfLink(url) });
      } catch (error) {
        // as sent, but no longer than any link is taken (a refused one may be any length)
        refused(error, link.slice(0, MAX_WEBHOOK_URL_LENGTH + 1));
      }
    }
    if (accepted.length === 0) {
      throw unprocessable(
        `no ${links.length > 0 ? "file or link" : "file"} of the batch is audio a ${SEPARATION_KINDS[kind].noun} takes: ${rejected.map((r) => `${r.fileName ?? "(unnamed)"}: ${r.reason}`).join("; ")}`,
      );
    }
    const running = await batches.runningJobs(origin.callerId);
    if (running + accepted.length > this.deps.maxJobsInFlight) {
      throw new ApiError(
        429,
        `this batch's ${accepted.length} jobs would give the caller ${running + accepted.length} running jobs, over MAX_CALLER_JOBS_IN_FLIGHT (${this.deps.maxJobsInFlight}); send it again once some have ended, or in smaller batches`,
        { "retry-after": "60" },
      );
    }
    await quota.check(
      origin.apiKeyId,
      accepted.reduce((sum, i) => sum + ("url" in i ? 0 : i.seconds), 0),
    );
    // The caller's batch jobs still running go first: each caller's n-th waiting batch job has
    // priority n, so callers take turns (docs/ARCHITECTURE.md, Batches).
    const ahead = await batches.runningBatchJobs(origin.callerId);
    let batchId = 0;
    await separations.createJobs(origin, plan, accepted, {
      create: async (db) => {
        batchId = (await batches.create({ callerId: origin.callerId, apiKeyId: origin.apiKeyId, kind: dbKind, rejected }, db)).id;
        return batchId;
      },
      priority: (index) => ahead + index + 1,
    });
    return this.get(origin.callerId, batchId);
  }

  async get(callerId: number, id: number): Promise<BatchRecord> {
    return this.deps.presenter.batch(await this.find(callerId, id));
  }

  /** The caller's batch with its jobs; 404 when it is not theirs. */
  async find(callerId: number, id: number): Promise<BatchWithJobs> {
    const batch = await this.deps.batches.findForCaller(callerId, id);
    if (!batch) throw notFound(`batch ${id} not found`);
    return batch;
  }

  async list(callerId: number, page: PageRequest): Promise<{ rows: BatchRecord[]; total: number }> {
    const { rows, total } = await this.deps.batches.listForCaller(callerId, page);
    return { rows: rows.map((r) => this.deps.presenter.batch(r)), total };
  }

  /** Cancels every job of the batch still running (as a job's own cancel does); 409 when none is. */
  async cancel(callerId: number, id: number): Promise<BatchRecord> {
    const batch = await this.find(callerId, id);
    const running = batch.jobs.filter((j) => j.status === "running");
    if (running.length === 0) throw conflict(`batch ${id} has already ended; only a batch with running jobs can be cancelled`);
    for (const job of running) await this.deps.cancels.cancelRunning("separation", job.id);
    return this.get(callerId, id);
  }

  /**
   * Deletes every job of the batch as a job's `DELETE` does (running ones cancelled first, files,
   * rows), then the batch. A deletion cut short (storage away: 503) leaves the batch with the
   * jobs not yet deleted; a retry finishes it.
   */
  async delete(callerId: number, id: number): Promise<void> {
    const batch = await this.find(callerId, id);
    for (const job of batch.jobs) {
      await this.deps.deletions.deleteJob("separation", job.id, "job", async () => job);
    }
    await this.deps.batches.delete(id);
  }
}
