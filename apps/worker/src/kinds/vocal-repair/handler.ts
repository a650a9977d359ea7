import { join } from "node:path";
import { decodeToPcm, encodeStereoPcm, type AudioProbe } from "@mixdown/audio";
import { isVocalRepairStep, JobFailure, jobOutputKeys, type VocalRepairStep } from "@mixdown/jobs";
import type { OutputSpec } from "@mixdown/separation";
import {
  readInstalledModels,
  resolveVocalSplit,
  VOCAL_SPLIT_OFF,
  vocalPairOf,
  type EnsembleAlgorithm,
} from "@mixdown/separation/installed-models";
import { planSeparationJob, SeparationPlanError } from "@mixdown/separation/job-plan";
import { writeRemainder } from "@mixdown/separation/vocal-split";
import type { ObjectStorage } from "@mixdown/storage";
import type { JobContext, JobHandler } from "../../run-job.ts";
import { checkInputLength } from "../../steps/input-length.ts";
import type { WorkerKind } from "../context.ts";
import { createSeparationPool, type SeparationPool } from "../separation/protocol.ts";
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

/** Each part of a repair's work, by its share of the job's progress when it runs (normalised over the parts that run). */
const WEIGHTS = { isolate: 8, denoise: 1, dereverb: 6, encode: 0.5 } as const;
type Part = keyof typeof WEIGHTS;

/** Every intermediate file is float WAV at the input's rate: exact, never clipped, read back without ffmpeg. */
const WORK_FORMAT = { format: "wav", sampleFormat: "f32" } as const satisfies OutputSpec;

/** Reports each part's progress as its share of the whole job's. */
function progressOf(parts: Part[], report: (fraction: number) => void): (part: Part) => (fraction: number) => void {
  const total = parts.reduce((sum, p) => sum + WEIGHTS[p], 0);
  return (part) => {
    const before = parts.slice(0, parts.indexOf(part)).reduce((sum, p) => sum + WEIGHTS[p], 0);
    return (fraction) => report(Math.min(0.99, (before + fraction * WEIGHTS[part]) / total));
  };
}

/**
 * Repairs one uploaded vocal: download it, isolate its vocal first when the input is a mix (the
 * vocal separation, as a vocal separation that names no model runs it), then the steps in their
 * fixed order: denoise (RNNoise on the denoise threads), dereverb (the vocal split's `reverb` stem,
 * separated on the separation threads and subtracted, as a vocal separation writes its lead).
 * The result is published as `output.<lossless>` and `output.mp3` under the row's own keys.
 */
export function vocalRepairHandler(deps: VocalRepairJobDeps): JobHandler<"vocal-repair"> {
  return {
    async run(context) {
      const { row, rowId, workDir, log, signal } = context;
      const steps = row.steps.filter(isVocalRepairStep);
      if (steps.length === 0) throw new JobFailure("permanent", `The job names no repair step (${row.steps.join(", ")})`);
      const inputPath = join(workDir, "input");
      await deps.storage.downloadToFile(row.inputKey, inputPath);
      signal.throwIfAborted();
      const probe = await checkInputLength(
        inputPath,
        { seconds: deps.maxInputSeconds, setting: "MAX_SEPARATION_SECONDS" },
        "input",
        signal,
      );
      if (!probe) throw new JobFailure("bad-input", "The uploaded file has no audio stream");
      const parts: Part[] = [...(row.isolateVocal ? (["isolate"] as const) : []), ...steps, "encode"];
      const progress = progressOf(parts, context.reportProgress);
      const models: string[] = [];
      let current = inputPath;
      let currentProbe: AudioProbe | undefined = probe;
      if (row.isolateVocal) {
        current = await isolateVocal(deps, context, { inputPath, probe }, progress("isolate"), models);
        currentProbe = undefined;
      }
      for (const step of steps) {
        current = await runStep(deps, context, step, { inputPath: current, probe: currentProbe }, progress(step), models);
        currentProbe = undefined;
        log.info({ step }, "ran the repair step");
      }
      const keys = jobOutputKeys("vocal-repair", rowId);
      const lossless = join(workDir, `output.${deps.losslessFormat}`);
      const lossy = join(workDir, "output.mp3");
      await encodeStereoPcm(decodeToPcm(current, { sampleRate: probe.sampleRate, signal }), {
        inputSampleRate: probe.sampleRate,
        targets: [
          deps.losslessFormat === "flac" ? { format: "flac", path: lossless, bitDepth: 24 } : { format: "wav", path: lossless },
          { format: "mp3", path: lossy, bitrateKbps: deps.lossyBitrateKbps },
        ],
        signal,
      });
      progress("encode")(1);
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

type RepairContext = Pick<JobContext<"vocal-repair">, "workDir" | "log" | "signal">;

/** The input's vocal, as the vocal separation writes it (the server's SEPARATION_MODEL_VOCALS, without the split). */
async function isolateVocal(
  deps: VocalRepairJobDeps,
  { workDir, log, signal }: RepairContext,
  input: { inputPath: string; probe: AudioProbe },
  report: (fraction: number) => void,
  models: string[],
): Promise<string> {
  const { models: installed } = await readInstalledModels(deps.modelsDir);
  let plan;
  try {
    plan = planSeparationJob({
      kind: "vocal-separation",
      installed,
      models: [],
      ensemble: null,
      settings: { models: deps.models.vocals, ensemble: deps.models.vocalsEnsemble, vocalSplit: VOCAL_SPLIT_OFF },
    });
  } catch (err) {
    if (err instanceof SeparationPlanError) throw new JobFailure(err.failure, err.message);
    throw err;
  }
  const result = await deps
    .separationPool()
    .run(
      {
        inputPath: input.inputPath,
        inputProbe: input.probe,
        outDir: join(workDir, "isolate"),
        outputs: [WORK_FORMAT],
        ...plan.run,
      },
      report,
      signal,
    );
  const pair = vocalPairOf(Object.keys(result.stems));
  const vocals = pair && result.stems[pair.vocals]?.wav;
  if (!vocals) throw new JobFailure("permanent", `The separation model "${plan.models.join(",")}" produced no vocals`);
  log.info({ models: plan.models, timings: result.timings }, "isolated the vocal");
  models.push(...plan.models);
  return vocals;
}

/** One repair step over `input`, written to a float WAV of its own; returns its path. */
async function runStep(
  deps: VocalRepairJobDeps,
  { workDir, log, signal }: RepairContext,
  step: VocalRepairStep,
  input: { inputPath: string; probe: AudioProbe | undefined },
  report: (fraction: number) => void,
  models: string[],
): Promise<string> {
  const out = join(workDir, `${step}.wav`);
  switch (step) {
    case "denoise": {
      const result = await deps.denoisePool.run(
        {
          inputPath: input.inputPath,
          ...(input.probe ? { inputProbe: input.probe } : {}),
          targets: [{ ...WORK_FORMAT, path: out }],
        },
        report,
        signal,
      );
      log.info({ frames: result.frames, voicedShare: result.voicedShare }, "denoised");
      return out;
    }
    case "dereverb": {
      const { models: installed } = await readInstalledModels(deps.modelsDir);
      const split = resolveVocalSplit(deps.models.vocalSplit, installed);
      if (!split.model) throw new JobFailure("permanent", `dereverb cannot run on this worker: ${split.reason}`);
      const parts = await deps.separationPool().run(
        {
          inputPath: input.inputPath,
          ...(input.probe ? { inputProbe: input.probe } : {}),
          modelName: split.model.name,
          manifests: [split.model.manifest],
          outDir: join(workDir, "dereverb"),
          outputs: [WORK_FORMAT],
          stems: ["reverb"],
        },
        (f) => report(f * 0.95),
        signal,
      );
      const reverb = parts.stems.reverb?.wav;
      if (!reverb) throw new JobFailure("permanent", `The vocal split model "${split.model.name}" produced no reverb stem`);
      // the dry vocal is what the reverb leaves of the input, as a vocal separation's lead is what harmony and reverb leave
      await writeRemainder(input.inputPath, [reverb], [{ ...WORK_FORMAT, path: out }], signal);
      models.push(split.model.name);
      return out;
    }
  }
}

/** The denoise threads and, on the first job that isolates or dereverbs, separation threads of the kind's own. */
export const vocalRepairKind: WorkerKind<"vocal-repair"> = {
  start({ config, storage, modelsDir, output, pooled, idle }) {
    const concurrency = config.WORKER_CONCURRENCY_VOCAL_REPAIR;
    const denoisePool = pooled(createDenoisePool(concurrency, idle("denoise")));
    let separationPool: SeparationPool | undefined;
    return vocalRepairHandler({
      storage,
      maxInputSeconds: config.MAX_SEPARATION_SECONDS,
      denoisePool,
      separationPool: () =>
        (separationPool ??= pooled(
          createSeparationPool(
            concurrency,
            {
              modelsDir,
              executionProvider: config.ORT_EXECUTION_PROVIDER,
              providerFallback: config.ORT_PROVIDER_FALLBACK,
              intraOpThreads: config.ORT_INTRA_OP_THREADS,
              interOpThreads: config.ORT_INTER_OP_THREADS,
              // loaded by the first job that runs them: a repair worker may never isolate or dereverb
              preload: [],
              ownThread: [],
            },
            { ...idle("vocal repair separation"), startUnloaded: true },
          ),
        )),
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
