import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { UnrecoverableError, type Job } from "bullmq";
import type { Logger } from "pino";
import type { VoiceModelMediaRepository } from "@mixdown/db";
import type { VoiceModelMediaPayload } from "@mixdown/queue";
import type { ObjectStorage } from "@mixdown/storage";
import { readMono } from "@mixdown/voice";
import type { VoiceConversionPool } from "../voice-conversion-protocol.ts";
import { TaskFailure } from "../task-threads.ts";
import { drawVoiceCover } from "../voice-cover.ts";
import { resolveVoiceModelFile } from "../voice-model-files.ts";
import { DEFAULT_CONVERSION_PARAMS } from "./voice-conversion.ts";

export interface VoiceModelMediaJobDeps {
  media: VoiceModelMediaRepository;
  storage: ObjectStorage;
  pool: VoiceConversionPool;
  tmpDir: string;
  modelsDir: string;
  lossyBitrateKbps: number;
  /** The fixed reference phrase every demo is converted from (`apps/worker/assets/demo-phrase.wav`). */
  demoPhrasePath: string;
  logger: Logger;
}

/** Where a model's rendered media is stored: deterministic, so a retry overwrites its own files. */
export const voiceModelDemoKey = (id: number) => `voice-models/${id}/demo.mp3`;
export const voiceModelCoverKey = (id: number) => `voice-models/${id}/cover.png`;

/**
 * Renders a ready voice model's media: the reference phrase converted with the model (by the same
 * conversion threads and settings as a voice-conversion job with default options) is its demo,
 * and, unless the owner uploaded a cover, the demo's spectrum drawn as a PNG is its cover. Both
 * are stored, then recorded on the row in one step. A model already done, gone or not ready is
 * left alone, so a duplicate delivery is harmless.
 */
export async function processVoiceModelMediaJob(job: Job<VoiceModelMediaPayload>, deps: VoiceModelMediaJobDeps): Promise<void> {
  const { voiceModelId } = job.data;
  const log = deps.logger.child({ voiceModelId, queue: "voice-model-media", bullJobId: job.id, attempt: job.attemptsMade + 1 });
  const model = await deps.media.findOwed(voiceModelId);
  if (!model) {
    log.info("voice model is not owed media; nothing to do");
    return;
  }
  const workDir = join(deps.tmpDir, "jobs", `voice-model-media-${voiceModelId}-${job.attemptsMade}-${process.pid}`);
  await mkdir(workDir, { recursive: true });
  try {
    const started = performance.now();
    const modelPath = await resolveVoiceModelFile(model, deps, join(workDir, "model.onnx"));
    const result = await deps.pool
      .run(
        {
          inputPath: deps.demoPhrasePath,
          modelPath,
          sampleRate: model.sampleRate,
          params: DEFAULT_CONVERSION_PARAMS,
          outDir: join(workDir, "out"),
          lossless: "wav",
          mp3BitrateKbps: deps.lossyBitrateKbps,
        },
        () => {},
      )
      .catch((err: unknown) => {
        if (err instanceof TaskFailure && err.unrecoverable) throw new UnrecoverableError(`the demo of voice model ${voiceModelId} cannot be rendered: ${err.message}`);
        throw err;
      });
    const demoKey = voiceModelDemoKey(voiceModelId);
    await deps.storage.putFile(demoKey, result.lossyOutput, { contentType: "audio/mpeg" });

    let imageKey: string | undefined;
    if (!model.imageKey) {
      const cover = join(workDir, "cover.png");
      await writeFile(cover, drawVoiceCover(await readMono(result.output, result.sampleRate), result.sampleRate));
      imageKey = voiceModelCoverKey(voiceModelId);
      await deps.storage.putFile(imageKey, cover, { contentType: "image/png" });
    }
    const updated = await deps.media.record(voiceModelId, { demoKey, ...(imageKey ? { imageKey } : {}) });
    log.info({ ms: Math.round(performance.now() - started), demoKey, imageKey, updated }, updated ? "voice model media rendered" : "voice model left ready meanwhile");
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
