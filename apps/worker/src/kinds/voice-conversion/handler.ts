import { join } from "node:path";
import { JobFailure } from "@mixdown/jobs";
import { jobOutputKeys, type ObjectStorage } from "@mixdown/storage";
import { readStoredConversionParams, StoredParamsError } from "@mixdown/voice/conversion-params";
import type { JobHandler } from "../../run-job.ts";
import { checkFreeSpace } from "../../steps/free-space.ts";
import { checkInputLength, probeSeconds } from "../../steps/input-length.ts";
import type { VoiceConversionPool } from "./protocol.ts";
import type { VoiceModelFiles } from "../../voice-model-files.ts";
import type { WorkerKind } from "../context.ts";

export interface VoiceConversionJobDeps {
  storage: ObjectStorage;
  /** MAX_CONVERSION_SECONDS: a longer input or backing track fails the job (bad input). */
  maxInputSeconds: number;
  pool: VoiceConversionPool;
  modelFiles: VoiceModelFiles;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
}

/** The row's params as the API stored them, checked again: a row no conversion can run ends `error` at once. */
function readParams(stored: unknown) {
  try {
    return readStoredConversionParams(stored);
  } catch (err) {
    if (err instanceof StoredParamsError) throw new JobFailure("bad-input", err.message);
    throw err;
  }
}

/**
 * Converts one uploaded voice: fetch the input (and backing), resolve the voice model file,
 * convert in a thread, upload the outputs under the row's own keys.
 */
export function voiceConversionHandler(deps: VoiceConversionJobDeps): JobHandler<"voice-conversion"> {
  return {
    async run({ kind, row, rowId, workDir, log, reportProgress, signal }) {
      const model = row.voiceModel;
      if (model.state !== "ready" || !model.fileKey)
        throw new JobFailure("bad-input", `Voice model ${model.id} is not usable (state ${model.state})`);
      const params = readParams(row.params);
      const inputPath = join(workDir, "input");
      await deps.storage.downloadToFile(row.inputKey, inputPath);
      let backingPath: string | undefined;
      if (row.backingKey) {
        backingPath = join(workDir, "backing");
        await deps.storage.downloadToFile(row.backingKey, backingPath);
      }
      const limit = { seconds: deps.maxInputSeconds, setting: "MAX_CONVERSION_SECONDS" };
      const inputProbe = await checkInputLength(inputPath, limit, "input", signal);
      const seconds = probeSeconds(inputProbe);
      if (backingPath) await checkInputLength(backingPath, limit, "backing track", signal);
      if (seconds !== undefined)
        await checkFreeSpace(workDir, {
          seconds,
          files: backingPath ? 2 : 1,
          formats: [
            deps.losslessFormat === "flac" ? { format: "flac" } : { format: "wav" },
            { format: "mp3", bitrateKbps: deps.lossyBitrateKbps },
          ],
          sampleRate: model.sampleRate,
        });
      const modelPath = await deps.modelFiles.resolve(model);
      const indexPath = await deps.modelFiles.resolveIndex(model);
      signal.throwIfAborted();
      const result = await deps.pool.run(
        {
          inputPath,
          ...(inputProbe ? { inputProbe } : {}),
          ...(backingPath ? { backingPath } : {}),
          modelPath,
          ...(indexPath ? { indexPath } : {}),
          sampleRate: model.sampleRate,
          params,
          outDir: join(workDir, "out"),
          lossless: deps.losslessFormat,
          mp3BitrateKbps: deps.lossyBitrateKbps,
        },
        reportProgress,
        signal,
      );
      log.info({ seconds: result.seconds, frames: result.frames }, "converted");

      const stored = jobOutputKeys(kind, rowId);
      const outputKey = stored.file(`output.${deps.losslessFormat}`);
      const lossyOutputKey = stored.file("output.mp3");
      const recombinedKey = result.recombined ? stored.file(`recombined.${deps.losslessFormat}`) : null;
      await Promise.all([
        deps.storage.putFile(outputKey, result.output),
        deps.storage.putFile(lossyOutputKey, result.lossyOutput),
        ...(result.recombined && recombinedKey ? [deps.storage.putFile(recombinedKey, result.recombined)] : []),
      ]);
      return { outputKey, lossyOutputKey, recombinedKey };
    },
    async discard({ kind, rowId }) {
      await deps.storage.deletePrefix(jobOutputKeys(kind, rowId).prefix);
    },
  };
}

export const voiceConversionKind: WorkerKind<"voice-conversion"> = {
  start: ({ config, storage, modelFiles, output, voiceConversionPool }) =>
    voiceConversionHandler({
      storage,
      maxInputSeconds: config.MAX_CONVERSION_SECONDS,
      pool: voiceConversionPool(),
      modelFiles,
      ...output,
    }),
};
