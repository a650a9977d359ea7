import type { HarmonyJob, HarmonyJobRepository } from "@mixdown/db";
import { isHarmonyDirection, isHarmonyInterval, musicalKeyName, parseMusicalKey } from "@mixdown/jobs";
import type { HarmonyJobRecord, RecordPresenter } from "@mixdown/records";
import { readInstalledModels } from "@mixdown/separation/installed-models";
import type { ObjectStorage } from "@mixdown/storage";
import type { FastifyBaseLogger } from "fastify";
import { unprocessable } from "../../http/errors.ts";
import { CallerJobs } from "../../jobs/caller-jobs.ts";
import type { CallerDeletions } from "../../jobs/caller-deletions.ts";
import type { JobCancels } from "../../jobs/job-cancels.ts";
import type { JobOrigin } from "../../jobs/job-origin.ts";
import type { JobSubmitter } from "../../jobs/job-submitter.ts";
import { createWithSeparationUpload } from "../../jobs/separation-upload.ts";
import type { UsageQuota } from "../../usage/quota.ts";
import { checkIsolateVocal } from "../vocal-repair/service.ts";
import type { HarmonyForm } from "./routes.ts";

export interface HarmonyServiceDeps {
  harmonies: HarmonyJobRepository;
  storage: ObjectStorage;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  /** MAX_SEPARATION_SECONDS: a harmony takes what a separation takes. */
  maxSeconds: number;
  quota: UsageQuota;
  /** MODELS_DIR, resolved: the vocal separation `isolateVocal` runs. */
  modelsDir: string;
  /** SEPARATION_MODEL_VOCALS (isolateVocal). */
  settings: { vocals: readonly string[] };
}

/** Harmonies: an upload checked as a separation's is, stored, and harmonised by the worker. */
export class HarmonyService extends CallerJobs<HarmonyJob, HarmonyJobRecord> {
  constructor(private readonly deps: HarmonyServiceDeps) {
    super({
      kind: "harmony",
      noun: "harmony",
      rows: deps.harmonies,
      present: (row) => deps.presenter.harmonyJob(row),
      cancels: deps.cancels,
      deletions: deps.deletions,
    });
  }

  /** Checks the key and the models an isolation needs, the upload and the key's quota, stores the upload, writes the row and queues the job. */
  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, form: HarmonyForm): Promise<HarmonyJobRecord> {
    const interval = form.interval ?? "third";
    const direction = form.direction ?? "above";
    // the form's enums hold both; narrowed for the row
    if (!isHarmonyInterval(interval) || !isHarmonyDirection(direction)) throw unprocessable("interval or direction is unknown");
    let requestedKey: string | null = null;
    if (form.key !== undefined && form.key.trim() !== "") {
      const key = parseMusicalKey(form.key);
      if (!key)
        throw unprocessable(
          `key must be a tonic and major or minor, e.g. "A minor", "F# major" or "Bb major" (got ${JSON.stringify(form.key)})`,
        );
      requestedKey = musicalKeyName(key);
    }
    const isolateVocal = form.isolateVocal ?? false;
    if (isolateVocal) checkIsolateVocal(this.deps.settings, (await readInstalledModels(this.deps.modelsDir)).models);
    const row = await createWithSeparationUpload(this.deps, { kind: "harmony", input: form.inputFile, apiKeyId }, (input, db) =>
      this.deps.harmonies.create(
        { callerId, apiKeyId, webhookUrl, ...input, interval, direction, requestedKey, isolateVocal },
        db,
      ),
    );
    await this.deps.submitter.submit({ queue: "harmony", payload: { jobId: row.id } }, () =>
      this.deps.harmonies.markEnqueued(row.id),
    );
    return this.deps.presenter.harmonyJob(row);
  }
}
