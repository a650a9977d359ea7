import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { JobFailure } from "@mixdown/jobs";
import { voiceModelKeys, type ObjectStorage } from "@mixdown/storage";
import { readMono } from "@mixdown/voice";
import type { JobHandler } from "../../run-job.ts";
import type { VoiceConversionPool } from "../voice-conversion/protocol.ts";
import { drawVoiceCover } from "./cover.ts";
import type { VoiceModelFiles } from "../../voice-model-files.ts";
import { CONVERSION_DEFAULTS } from "@mixdown/voice/conversion-params";
import { fileURLToPath } from "node:url";
import type { WorkerKind } from "../context.ts";

export interface VoiceModelMediaJobDeps {
  storage: ObjectStorage;
  pool: VoiceConversionPool;
  modelFiles: VoiceModelFiles;
  lossyBitrateKbps: number;
  /** The fixed reference phrase every demo is converted from (`apps/worker/assets/demo-phrase.wav`). */
  demoPhrasePath: string;
}

/** Where a model's rendered media is stored: deterministic, so a retry overwrites its own files. */

/**
 * Renders a ready voice model's media: the reference phrase converted with the model (by the same
 * conversion threads and settings as a voice-conversion job with default options) is its demo,
 * and, unless the owner uploaded a cover, the demo's spectrum drawn as a PNG is its cover.
 */
export function voiceModelMediaHandler(deps: VoiceModelMediaJobDeps): JobHandler<"voice-model-media"> {
  return {
    async run({ row: model, rowId, workDir, log }) {
      const modelPath = await deps.modelFiles.resolve(model);
      const indexPath = await deps.modelFiles.resolveIndex(model);
      const result = await deps.pool
        .run(
          {
            inputPath: deps.demoPhrasePath,
            modelPath,
            ...(indexPath ? { indexPath } : {}),
            sampleRate: model.sampleRate,
            params: CONVERSION_DEFAULTS,
            outDir: join(workDir, "out"),
            lossless: "wav",
            mp3BitrateKbps: deps.lossyBitrateKbps,
          },
          () => {},
        )
        .catch((err: unknown) => {
          if (err instanceof JobFailure && !err.retryable)
            throw new JobFailure(err.kind, `the demo of voice model ${rowId} cannot be rendered: ${err.message}`);
          throw err;
        });
      const demoKey = voiceModelKeys(rowId).demo;
      await deps.storage.putFile(demoKey, result.lossyOutput, { contentType: "audio/mpeg" });

      let imageKey: string | undefined;
      if (!model.imageKey) {
        const cover = join(workDir, "cover.png");
        await writeFile(cover, drawVoiceCover(await readMono(result.output, result.sampleRate), result.sampleRate));
        imageKey = voiceModelKeys(rowId).cover;
        await deps.storage.putFile(imageKey, cover, { contentType: "image/png" });
      }
      log.info({ demoKey, imageKey }, "voice model media rendered");
      return { demoKey, ...(imageKey ? { imageKey } : {}) };
    },
  };
}

/** The fixed phrase every voice model's demo is converted from (see assets/README.md). */
export const DEMO_PHRASE_PATH = fileURLToPath(new URL("../../../assets/demo-phrase.wav", import.meta.url));

export const voiceModelMediaKind: WorkerKind<"voice-model-media"> = {
  start: ({ config, storage, modelFiles, voiceConversionPool }) =>
    voiceModelMediaHandler({
      storage,
      pool: voiceConversionPool(),
      modelFiles,
      lossyBitrateKbps: config.LOSSY_BITRATE_KBPS,
      demoPhrasePath: DEMO_PHRASE_PATH,
    }),
};
