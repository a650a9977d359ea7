import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { UnrecoverableError, type Job } from "bullmq";
import type { Logger } from "pino";
import type { VoiceBlendJobRunRepository } from "@mixdown/db";
import { blendOnnxModels, IncompatibleModelsError, InvalidModelError } from "@mixdown/onnx-blend";
import type { JobQueues, VoiceBlendPayload } from "@mixdown/queue";
import type { ObjectStorage } from "@mixdown/storage";
import { resolveVoiceModelFile } from "../voice-model-files.ts";

export interface VoiceBlendJobDeps {
  runs: VoiceBlendJobRunRepository;
  storage: ObjectStorage;
  modelsDir: string;
  tmpDir: string;
  /** To queue the new model's demo and cover once it is ready. */
  queues: Pick<JobQueues, "enqueueVoiceModelMedia">;
  logger: Logger;
}

/** Where a blend's output model file is stored. Deterministic, so a retry overwrites its own file. */
export const blendedModelKey = (outputModelId: number) => `voice-models/${outputModelId}/model.onnx`;

/**
 * Blends the job's models into its output model: fetch the files, weighted sum of the float
 * weights (@mixdown/onnx-blend), store the new file, then publish model (`ready`) and job
 * (`success`) in one transaction. Inputs that can never blend (a model gone or without a file,
 * different architectures, shapes or constants) end the job `error` without retries. The blend
 * takes well under a second for RVC-sized models, so it runs on this thread: the job lock is
 * renewed long before it could expire.
 */
export async function processVoiceBlendJob(job: Job<VoiceBlendPayload>, deps: VoiceBlendJobDeps): Promise<void> {
  const { jobId } = job.data;
  const log = deps.logger.child({ jobId, queue: "voice-blend", bullJobId: job.id, attempt: job.attemptsMade + 1 });
  const runnable = await deps.runs.findRunnable(jobId);
  if (!runnable) {
    log.info("row is not running any more; nothing to do");
    return;
  }
  const { job: row, inputs } = runnable;
  const wanted = [row.model1Id, row.model2Id, row.model3Id, row.model4Id].filter((m): m is number => m !== null);
  const gone = wanted.filter((id) => !inputs.some((i) => i.model.id === id));
  if (gone.length > 0) throw new UnrecoverableError(`voice model ${gone.join(", ")} no longer exists`);
  const first = inputs[0]!.model;
  for (const { model } of inputs) {
    if (model.state !== "ready") throw new UnrecoverableError(`voice model ${model.id} is not usable (state ${model.state})`);
    if (model.architecture !== first.architecture || model.sampleRate !== first.sampleRate) {
      throw new UnrecoverableError(
        `voice model ${model.id} (${model.architecture}, ${model.sampleRate} Hz) cannot be blended with voice model ${first.id} (${first.architecture}, ${first.sampleRate} Hz)`,
      );
    }
  }
  await deps.runs.markStarted(jobId, job.attemptsMade === 0);

  const workDir = join(deps.tmpDir, "jobs", `voice-blend-${jobId}-${job.attemptsMade}-${process.pid}`);
  await mkdir(workDir, { recursive: true });
  try {
    const started = performance.now();
    const paths = await Promise.all(
      inputs.map(({ model }, i) => resolveVoiceModelFile(model, deps, join(workDir, `input-${i + 1}.onnx`))),
    );
    await deps.runs.setProgress(jobId, 30);
    const output = join(workDir, "model.onnx");
    const result = await blendOnnxModels({
      inputs: inputs.map(({ model, alpha }, i) => ({ path: paths[i]!, alpha, label: `voice model ${model.id}` })),
      output,
    }).catch((err: unknown) => {
      if (err instanceof IncompatibleModelsError || err instanceof InvalidModelError) {
        throw new UnrecoverableError(`The voice models cannot be blended: ${err.message}`);
      }
      throw err;
    });
    await deps.runs.setProgress(jobId, 80);
    const fileKey = blendedModelKey(row.outputModelId);
    await deps.storage.putFile(fileKey, output, { contentType: "application/octet-stream" });
    const updated = await deps.runs.complete(jobId, {
      fileKey,
      details: { size: result.size, blendedTensors: result.blended, ...(result.truncated.length ? { truncated: result.truncated } : {}) },
    });
    // Also after a lost update (updated false): the media job does nothing when it is not owed.
    await deps.queues
      .enqueueVoiceModelMedia({ voiceModelId: row.outputModelId })
      .catch((err: Error) => log.warn({ err: err.message }, "could not queue the blended model's media; the reconciler will"));
    await job.updateProgress(100);
    log.info(
      { ms: Math.round(performance.now() - started), outputModelId: row.outputModelId, size: result.size, truncated: result.truncated, updated },
      updated ? "voice blend succeeded" : "row had already finished",
    );
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
