import { join } from "node:path";
import { isVocalRepairStep, JobFailure, jobOutputKeys } from "@mixdown/jobs";
import { RepairModelProblem, repairVocalFile } from "@mixdown/repair";
import { readInstalledModels, type EnsembleAlgorithm } from "@mixdown/separation/installed-models";
import { SeparationPlanError } from "@mixdown/separation/job-plan";
import type { ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../../run-job.ts";
import { fetchCheckedInput, separationInput } from "../../steps/input-length.ts";
import { losslessAndMp3 } from "../../steps/output-targets.ts";
import type { WorkerKind } from "../context.ts";
import { ownSeparationPool, type SeparationPool } from "../separation/protocol.ts";
import { createDenoisePool, type DenoisePool } from "./protocol.ts";

export interface VocalRepairJobDeps {
  storage: ObjectStorage;
  /** MAX_SEPARATION_SECONDS: a longer input fails the job (bad input). */
  maxInputSeconds: number;
  denoisePool: DenoisePool;
  /** The separation threads `isolateVocal` and `dereverb` run on (made on the first job that needs them). */
  separationPool: () => SeparationPool;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
  modelsDir: string;
  /** SEPARATION_MODEL_VOCALS and its ensemble (isolateVocal), SEPARATION_MODEL_VOCAL_SPLIT (dereverb). */
  models: { vocals: readonly string[]; vocalsEnsemble: EnsembleAlgorithm; vocalSplit: string };
}

/**
 * Repairs one uploaded vocal (`repairVocalFile`): download it, isolate its vocal when the input is
 * a mix and run the steps, RNNoise on the denoise threads and the separation models on separation
 * threads, then publish `output.<lossless>` and `output.mp3` under the row's own keys.
 */
export function vocalRepairHandler(deps: VocalRepairJobDeps): JobHandler<"vocal-repair"> {
  return {
    async run({ row, rowId, workDir, log, signal, reportProgress }) {
      const steps = row.steps.filter(isVocalRepairStep);
      if (steps.length === 0) throw new JobFailure("permanent", `The job names no repair step (${row.steps.join(", ")})`);
      const inputPath = join(workDir, "input");
      const probe = await fetchCheckedInput(deps.storage, row.inputKey, inputPath, separationInput(deps.maxInputSeconds), signal);
      // read once per job: the models directory may have changed since start
      const installed = row.isolateVocal || steps.includes("dereverb") ? (await readInstalledModels(deps.modelsDir)).models : [];
      const output = losslessAndMp3(workDir, "output", deps);
      const [lossless, lossy] = output.files;
      let models: string[];
      try {
        ({ models } = await repairVocalFile({
          inputPath,
          probe,
          steps,
          isolateVocal: row.isolateVocal,
          workDir,
          installed,
          models: deps.models,
          targets: output.targets,
          runners: {
            separate: (request, onProgress) => deps.separationPool().run(request, onProgress, signal),
            denoise: (request, onProgress) => deps.denoisePool.run(request, onProgress, signal),
          },
          onProgress: reportProgress,
          onPart: (part, detail) => log.info(detail, `vocal repair: ${part}`),
          signal,
        }));
      } catch (err) {
        if (err instanceof SeparationPlanError) throw new JobFailure(err.failure, err.message);
        if (err instanceof RepairModelProblem) throw new JobFailure("permanent", err.message);
        throw err;
      }
      const keys = jobOutputKeys("vocal-repair", rowId);
      const outputKey = keys.file(`output.${deps.losslessFormat}`);
      const lossyOutputKey = keys.file("output.mp3");
      await Promise.all([
        deps.storage.putFile(outputKey, lossless, { final: true }),
        deps.storage.putFile(lossyOutputKey, lossy, { final: true }),
      ]);
      return { outputKey, lossyOutputKey, models };
    },
    async discard({ rowId }) {
      await deps.storage.deletePrefix(jobOutputKeys("vocal-repair", rowId).prefix);
    },
  };
}

/** The denoise threads and, on the first job that isolates or dereverbs, separation threads of the kind's own. */
export const vocalRepairKind: WorkerKind<"vocal-repair"> = {
  start(ctx) {
    const { config, storage, modelsDir, output, pooled, idle } = ctx;
    const concurrency = config.WORKER_CONCURRENCY_VOCAL_REPAIR;
    return vocalRepairHandler({
      storage,
      maxInputSeconds: config.MAX_SEPARATION_SECONDS,
      denoisePool: pooled(createDenoisePool(concurrency, idle("denoise"))),
      separationPool: ownSeparationPool(ctx, concurrency, "vocal repair separation"),
      ...output,
      modelsDir,
      models: {
        vocals: config.SEPARATION_MODEL_VOCALS,
        vocalsEnsemble: config.SEPARATION_ENSEMBLE_VOCALS,
        vocalSplit: config.SEPARATION_MODEL_VOCAL_SPLIT,
      },
    });
  },
};
