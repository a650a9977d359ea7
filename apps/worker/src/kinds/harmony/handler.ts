import { join } from "node:path";
import { harmonizeFile } from "@mixdown/harmony";
import { isHarmonyDirection, isHarmonyInterval, JobFailure, jobOutputKeys, parseMusicalKey } from "@mixdown/jobs";
import { RepairModelProblem } from "@mixdown/repair";
import { readInstalledModels, type EnsembleAlgorithm } from "@mixdown/separation/installed-models";
import { SeparationPlanError } from "@mixdown/separation/job-plan";
import type { ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../../run-job.ts";
import { fetchCheckedInput, separationInput } from "../../steps/input-length.ts";
import { losslessAndMp3 } from "../../steps/output-targets.ts";
import type { WorkerKind } from "../context.ts";
import { ownSeparationPool, type SeparationPool } from "../separation/protocol.ts";
import { createHarmonyPool, type HarmonyPool } from "./protocol.ts";

export interface HarmonyJobDeps {
  storage: ObjectStorage;
  /** MAX_SEPARATION_SECONDS: a longer input fails the job (bad input). */
  maxInputSeconds: number;
  harmonyPool: HarmonyPool;
  /** The separation threads `isolateVocal` runs on (made on the first job that needs them). */
  separationPool: () => SeparationPool;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
  modelsDir: string;
  /** SEPARATION_MODEL_VOCALS and its ensemble (isolateVocal). */
  models: { vocals: readonly string[]; vocalsEnsemble: EnsembleAlgorithm };
}

/**
 * Harmonises one uploaded vocal (`harmonizeFile`): download it, isolate its vocal when the input
 * is a mix (separation threads), then the key, the notes and each note's shift on a harmony thread,
 * and publish `harmony.<lossless>`, `harmony.mp3`, `mix.<lossless>` and `mix.mp3` under the row's own keys.
 */
export function harmonyHandler(deps: HarmonyJobDeps): JobHandler<"harmony"> {
  return {
    async run({ row, rowId, workDir, log, signal, reportProgress }) {
      const { interval, direction } = row;
      if (!isHarmonyInterval(interval) || !isHarmonyDirection(direction))
        throw new JobFailure("permanent", `The job's interval (${interval}) or direction (${direction}) is unknown`);
      const key = row.requestedKey === null ? null : parseMusicalKey(row.requestedKey);
      if (row.requestedKey !== null && !key)
        throw new JobFailure("permanent", `The job's key (${row.requestedKey}) is not a key`);
      const inputPath = join(workDir, "input");
      const probe = await fetchCheckedInput(deps.storage, row.inputKey, inputPath, separationInput(deps.maxInputSeconds), signal);
      // read once per job: the models directory may have changed since start
      const installed = row.isolateVocal ? (await readInstalledModels(deps.modelsDir)).models : [];
      const harmony = losslessAndMp3(workDir, "harmony", deps);
      const mix = losslessAndMp3(workDir, "mix", deps);
      let result: Awaited<ReturnType<typeof harmonizeFile>>;
      try {
        result = await harmonizeFile({
          inputPath,
          probe,
          key,
          interval,
          direction,
          isolateVocal: row.isolateVocal,
          workDir,
          installed,
          models: deps.models,
          harmonyTargets: harmony.targets,
          mixTargets: mix.targets,
          runners: {
            separate: (request, onProgress) => deps.separationPool().run(request, onProgress, signal),
            harmonize: (request, onProgress) => deps.harmonyPool.run(request, onProgress, signal),
          },
          onProgress: reportProgress,
          signal,
        });
      } catch (err) {
        if (err instanceof SeparationPlanError) throw new JobFailure(err.failure, err.message);
        if (err instanceof RepairModelProblem) throw new JobFailure("permanent", err.message);
        throw err;
      }
      log.info({ key: result.key, keySource: result.keySource, notes: result.notes, models: result.models }, "harmony");
      const keys = jobOutputKeys("harmony", rowId);
      const [harmonyKey, lossyHarmonyKey, mixKey, lossyMixKey] = [
        keys.file(`harmony.${deps.losslessFormat}`),
        keys.file("harmony.mp3"),
        keys.file(`mix.${deps.losslessFormat}`),
        keys.file("mix.mp3"),
      ];
      const files = [...harmony.files, ...mix.files];
      await Promise.all(
        [harmonyKey, lossyHarmonyKey, mixKey, lossyMixKey].map((k, i) => deps.storage.putFile(k, files[i]!, { final: true })),
      );
      return {
        harmonyKey,
        lossyHarmonyKey,
        mixKey,
        lossyMixKey,
        key: result.key,
        keyConfidence: result.keyConfidence,
        notes: result.notes,
        models: result.models,
      };
    },
    async discard({ rowId }) {
      await deps.storage.deletePrefix(jobOutputKeys("harmony", rowId).prefix);
    },
  };
}

/** The harmony threads and, on the first job that isolates a vocal, separation threads of the kind's own. */
export const harmonyKind: WorkerKind<"harmony"> = {
  start(ctx) {
    const { config, storage, modelsDir, output, pooled, idle } = ctx;
    const concurrency = config.WORKER_CONCURRENCY_HARMONY;
    return harmonyHandler({
      storage,
      maxInputSeconds: config.MAX_SEPARATION_SECONDS,
      harmonyPool: pooled(createHarmonyPool(concurrency, idle("harmony"))),
      separationPool: ownSeparationPool(ctx, concurrency, "harmony separation"),
      ...output,
      modelsDir,
      models: { vocals: config.SEPARATION_MODEL_VOCALS, vocalsEnsemble: config.SEPARATION_ENSEMBLE_VOCALS },
    });
  },
};
