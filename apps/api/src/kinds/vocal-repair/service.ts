import type { VocalRepairJob, VocalRepairJobRepository } from "@mixdown/db";
import { parseVocalRepairSteps, VOCAL_REPAIR_STEPS, type VocalRepairStep } from "@mixdown/jobs";
import type { RecordPresenter, VocalRepairJobRecord } from "@mixdown/records";
import {
  modelListProblemMessage,
  readInstalledModels,
  resolveModelList,
  resolveVocalSplit,
  type InstalledModel,
} from "@mixdown/separation/installed-models";
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
import type { VocalRepairForm } from "./routes.ts";

/** Where the separation models that `isolateVocal` and `dereverb` run are found, and which the settings name. */
export interface RepairModelSettings {
  /** MODELS_DIR, resolved: the separation models `isolateVocal` and `dereverb` run. */
  modelsDir: string;
  /** SEPARATION_MODEL_VOCALS (isolateVocal) and SEPARATION_MODEL_VOCAL_SPLIT (dereverb). */
  settings: { vocals: readonly string[]; vocalSplit: string };
}

/**
 * A create's `steps` as a vocal repair checks them, before anything is stored: the names known, at
 * least one, and the models a dereverb and an isolation run installed (422 naming the problem).
 * Returns the steps in the order they run. A pipeline's `repair` step is checked by the same.
 */
export async function checkRepairSteps(
  { modelsDir, settings }: RepairModelSettings,
  list: string,
  isolateVocal: boolean,
): Promise<VocalRepairStep[]> {
  const { steps, unknown } = parseVocalRepairSteps(list);
  const known = `one or more of ${VOCAL_REPAIR_STEPS.join(", ")}, comma-separated`;
  if (unknown.length > 0)
    throw unprocessable(`steps names ${unknown.map((s) => JSON.stringify(s)).join(", ")}, not a repair step (${known})`);
  if (steps.length === 0) throw unprocessable(`steps is empty: name ${known}`);
  const dereverb = steps.includes("dereverb");
  if (!dereverb && !isolateVocal) return steps;
  const { models } = await readInstalledModels(modelsDir);
  if (dereverb) {
    const split = resolveVocalSplit(settings.vocalSplit, models);
    if (split.reason) throw unprocessable(`dereverb cannot run on this server: ${split.reason}`);
  }
  if (isolateVocal) checkIsolateVocal(settings, models);
  return steps;
}

/**
 * `isolateVocal` as the kinds that take it check it (a vocal repair, a harmony): the vocal
 * separation's models (SEPARATION_MODEL_VOCALS) installed, else a 422 naming the problem.
 */
export function checkIsolateVocal(settings: { vocals: readonly string[] }, installed: readonly InstalledModel[]): void {
  const resolved = resolveModelList(installed, settings.vocals, "vocal-separation");
  if (resolved.problem)
    throw unprocessable(
      `isolateVocal cannot run on this server (SEPARATION_MODEL_VOCALS): ${modelListProblemMessage(resolved, "vocal-separation")}`,
    );
}

export interface VocalRepairServiceDeps extends RepairModelSettings {
  repairs: VocalRepairJobRepository;
  storage: ObjectStorage;
  submitter: JobSubmitter;
  cancels: JobCancels;
  deletions: CallerDeletions;
  presenter: RecordPresenter;
  log: FastifyBaseLogger;
  /** MAX_SEPARATION_SECONDS: a repair takes what a separation takes. */
  maxSeconds: number;
  quota: UsageQuota;
}

/** Vocal repairs: an upload checked as a separation's is, stored, and repaired by the worker. */
export class VocalRepairService extends CallerJobs<VocalRepairJob, VocalRepairJobRecord> {
  constructor(private readonly deps: VocalRepairServiceDeps) {
    super({
      kind: "vocal-repair",
      noun: "vocal repair",
      rows: deps.repairs,
      present: (row) => deps.presenter.vocalRepairJob(row),
      cancels: deps.cancels,
      deletions: deps.deletions,
    });
  }

  /** Checks the steps, the models they need, the upload and the key's quota, stores the upload, writes the row and queues the job. */
  async create({ callerId, apiKeyId, webhookUrl }: JobOrigin, form: VocalRepairForm): Promise<VocalRepairJobRecord> {
    const isolateVocal = form.isolateVocal ?? false;
    const steps = await checkRepairSteps(this.deps, form.steps, isolateVocal);
    const row = await createWithSeparationUpload(
      this.deps,
      { kind: "vocal-repair", input: form.inputFile, apiKeyId },
      (input, db) => this.deps.repairs.create({ callerId, apiKeyId, webhookUrl, ...input, steps, isolateVocal }, db),
    );
    await this.deps.submitter.submit({ queue: "vocal-repair", payload: { jobId: row.id } }, () =>
      this.deps.repairs.markEnqueued(row.id),
    );
    return this.deps.presenter.vocalRepairJob(row);
  }
}
