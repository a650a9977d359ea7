import { createHash } from "node:crypto";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { UnrecoverableError, type Job } from "bullmq";
import type { Logger } from "pino";
import type { VoiceConversionJobRunRepository } from "@mixdown/db";
import type { VoiceConversionPayload } from "@mixdown/queue";
import type { ObjectStorage } from "@mixdown/storage";
import type { ConversionParams } from "@mixdown/voice";
import { BUILTIN_FILE_PREFIX } from "@mixdown/voice/catalogue";
import type { VoiceConversionPool } from "../voice-conversion-protocol.ts";
import { TaskFailure } from "../task-threads.ts";
import { progressReporter } from "./progress.ts";

export interface VoiceConversionJobDeps {
  runs: VoiceConversionJobRunRepository;
  storage: ObjectStorage;
  pool: VoiceConversionPool;
  tmpDir: string;
  modelsDir: string;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
  logger: Logger;
}

/** What a conversion uses for the options its request left out (the demo of every model, too). */
export const DEFAULT_CONVERSION_PARAMS: ConversionParams = { conversionStrength: 0.5, modelVolumeMix: 0.5, pitchShift: 0, pre: {}, post: {} };

/**
 * Converts one uploaded voice: fetch the input (and backing), resolve the voice model file
 * (built-in under MODELS_DIR or cached from storage), convert in a thread, upload the outputs
 * under the row's own keys and publish them in one statement. Safe to run twice.
 */
export async function processVoiceConversionJob(job: Job<VoiceConversionPayload>, deps: VoiceConversionJobDeps): Promise<void> {
  const { jobId } = job.data;
  const log = deps.logger.child({ jobId, queue: "voice-conversion", bullJobId: job.id, attempt: job.attemptsMade + 1 });
  const row = await deps.runs.findRunnable(jobId);
  if (!row) {
    log.info("row is not running any more; nothing to do");
    return;
  }
  const model = row.voiceModel;
  if (model.state !== "ready" || !model.fileKey) throw new UnrecoverableError(`Voice model ${model.id} is not usable (state ${model.state})`);
  await deps.runs.markStarted(jobId, job.attemptsMade === 0);

  const workDir = join(deps.tmpDir, "jobs", `voice-conversion-${jobId}-${job.attemptsMade}-${process.pid}`);
  await mkdir(workDir, { recursive: true });
  try {
    const inputPath = join(workDir, "input");
    await deps.storage.downloadToFile(row.inputKey, inputPath);
    let backingPath: string | undefined;
    if (row.backingKey) {
      backingPath = join(workDir, "backing");
      await deps.storage.downloadToFile(row.backingKey, backingPath);
    }
    const modelPath = await resolveModelFile(model.fileKey, deps);
    const params = { ...DEFAULT_CONVERSION_PARAMS, ...(row.params as Partial<ConversionParams>) };

    const progress = progressReporter(job, (percent) => deps.runs.setProgress(jobId, percent), log);
    const started = performance.now();
    const result = await deps.pool
      .run(
        {
          inputPath,
          ...(backingPath ? { backingPath } : {}),
          modelPath,
          sampleRate: model.sampleRate,
          params,
          outDir: join(workDir, "out"),
          lossless: deps.losslessFormat,
          mp3BitrateKbps: deps.lossyBitrateKbps,
        },
        progress.report,
      )
      .catch((err: unknown) => {
        if (err instanceof TaskFailure && err.unrecoverable) {
          throw new UnrecoverableError(/decode|no audio|Invalid data/i.test(err.message) ? `The uploaded audio could not be decoded (${err.message})` : err.message);
        }
        throw err;
      });
    await progress.flush();

    const prefix = `outputs/voice-conversion/${jobId}`;
    const outputKey = `${prefix}/output.${deps.losslessFormat}`;
    const lossyOutputKey = `${prefix}/output.mp3`;
    const recombinedKey = result.recombined ? `${prefix}/recombined.${deps.losslessFormat}` : null;
    await Promise.all([
      deps.storage.putFile(outputKey, result.output),
      deps.storage.putFile(lossyOutputKey, result.lossyOutput),
      ...(result.recombined && recombinedKey ? [deps.storage.putFile(recombinedKey, result.recombined)] : []),
    ]);
    const updated = await deps.runs.complete(jobId, { outputKey, lossyOutputKey, recombinedKey });
    await job.updateProgress(100);
    log.info(
      { ms: Math.round(performance.now() - started), seconds: result.seconds, frames: result.frames, updated },
      updated ? "voice conversion succeeded" : "row had already finished",
    );
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/** Built-in models are read in place; stored ones are cached on local disk by key. */
async function resolveModelFile(fileKey: string, deps: VoiceConversionJobDeps): Promise<string> {
  if (fileKey.startsWith(BUILTIN_FILE_PREFIX)) {
    const relative = fileKey.slice(BUILTIN_FILE_PREFIX.length);
    if (isAbsolute(relative) || relative.split("/").includes("..")) throw new UnrecoverableError(`invalid built-in model path ${relative}`);
    return resolve(deps.modelsDir, relative);
  }
  const cacheDir = join(deps.tmpDir, "voice-models");
  const path = join(cacheDir, `${createHash("sha256").update(fileKey).digest("hex").slice(0, 24)}.onnx`);
  const present = await stat(path).then(
    () => true,
    () => false,
  );
  if (!present) {
    await mkdir(cacheDir, { recursive: true });
    const partial = `${path}.${process.pid}.part`;
    await deps.storage.downloadToFile(fileKey, partial);
    await rename(partial, path);
  }
  return path;
}
