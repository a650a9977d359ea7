import type { MasteringJob, MasteringJobRepository, NewMasteringJob } from "@mixdown/db";
import { LOUDNESS_TARGET_DEFAULTS, MATCHERING_DEFAULTS } from "@mixdown/mastering/config";
import type { MasteringJobRecord, RecordPresenter } from "@mixdown/records";
import type { ObjectStorage } from "@mixdown/storage";
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
import { SEPARATION_FORMATS } from "../../jobs/separation-upload.ts";
import type { MasteringForm } from "./routes.ts";

export interface MasteringServiceDeps {
  masterings: MasteringJobRepository;
  storage: ObjectStorage;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  /** MAX_SEPARATION_SECONDS: a mastering takes what a separation takes. */
  maxSeconds: number;
  quota: UsageQuota;
}

/** The shortest track Matchering takes: more than one FFT frame at its internal rate. */
const MATCHERING_MIN_SECONDS = MATCHERING_DEFAULTS.fftSize / MATCHERING_DEFAULTS.internalSampleRate;

/** Masterings: the uploads checked as a separation's are, the mode decided, stored, and mastered by the worker. */
export class MasteringService extends CallerJobs<MasteringJob, MasteringJobRecord> {
  constructor(private readonly deps: MasteringServiceDeps) {
    super({
      kind: "mastering",
      noun: "mastering",
      rows: deps.masterings,
      present: (row) => deps.presenter.masteringJob(row),
      cancels: deps.cancels,
      deletions: deps.deletions,
    });
  }

  /** Checks the form's mode and uploads and the key's quota, stores the uploads, writes the row and queues the job. */
  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, form: MasteringForm): Promise<MasteringJobRecord> {
    const { targetFile: target, referenceFile: reference } = form;
    const loudness = form.targetLufs !== undefined || form.truePeakDb !== undefined;
    if (reference && loudness)
      throw unprocessable("give referenceFile (reference mastering) or targetLufs/truePeakDb (a loudness target), not both");
    if (!reference && !loudness)
      throw unprocessable("give referenceFile (reference mastering) or targetLufs and/or truePeakDb (a loudness target)");

    const limit = { seconds: this.deps.maxSeconds, setting: "MAX_SEPARATION_SECONDS" };
    const { format, seconds } = await checkAudioUpload(target, SEPARATION_FORMATS, limit);
    const checkedReference = reference ? await checkAudioUpload(reference, SEPARATION_FORMATS, limit) : null;
    if (checkedReference) {
      for (const [field, length] of [
        ["targetFile", seconds],
        ["referenceFile", checkedReference.seconds],
      ] as const) {
        if (length > MATCHERING_DEFAULTS.maxLength)
          throw unprocessable(
            `${field} is longer than reference mastering takes (${MATCHERING_DEFAULTS.maxLength / 60} minutes)`,
          );
        if (length <= MATCHERING_MIN_SECONDS)
          throw unprocessable(
            `${field} is shorter than reference mastering takes (more than ${MATCHERING_DEFAULTS.fftSize} samples at 44.1 kHz)`,
          );
      }
    }
    // The target mastered is what counts; a reference is only measured.
    await this.deps.quota.check(apiKeyId, seconds);

    const uploads = new StoredUploads(this.deps.storage, this.deps.log);
    const row = await uploads.commit(async () => {
      const inputKey = await uploads.store("mastering", target, format);
      const mode =
        reference && checkedReference
          ? {
              referenceKey: await uploads.store("mastering", reference, checkedReference.format),
              referenceFormat: checkedReference.format,
              referenceFileName: reference.filename?.slice(0, 255) ?? null,
            }
          : {
              targetLufs: form.targetLufs ?? LOUDNESS_TARGET_DEFAULTS.integratedLufs,
              truePeakDb: form.truePeakDb ?? LOUDNESS_TARGET_DEFAULTS.truePeakDb,
            };
      const input: NewMasteringJob = {
        callerId,
        apiKeyId,
        webhookUrl,
        inputKey,
        inputFormat: format,
        inputFileName: target.filename?.slice(0, 255) ?? null,
        audioSeconds: seconds,
        ...mode,
      };
      return this.deps.quota.admit(apiKeyId, seconds, (db) => this.deps.masterings.create(input, db));
    });
    await this.deps.submitter.submit({ queue: "mastering", payload: { jobId: row.id } }, () =>
      this.deps.masterings.markEnqueued(row.id),
    );
    return this.deps.presenter.masteringJob(row);
  }
}
