import { join } from "node:path";
import { decodeToPcm, encodeStereoPcm, type AudioProbe, type EncodeTarget } from "@mixdown/audio";
import type { VocalRepairStep } from "@mixdown/jobs";
import type { OutputSpec, SeparateFileResult } from "@mixdown/separation";
import {
  resolveVocalSplit,
  VOCAL_SPLIT_OFF,
  vocalPairOf,
  type EnsembleAlgorithm,
  type InstalledModel,
} from "@mixdown/separation/installed-models";
import { planSeparationJob, type SeparationRun } from "@mixdown/separation/job-plan";
import { writeRemainder } from "@mixdown/separation/vocal-split";
import type { DenoiseFileResult } from "./denoise.ts";

/** One separation run, as the worker's separation thread takes it (`SeparationRequest`). */
export type RepairSeparation = {
  inputPath: string;
  inputProbe?: AudioProbe;
  outDir: string;
  outputs: OutputSpec[];
} & SeparationRun;

/**
 * Where a repair's heavy parts run: the worker's threads, or (the CLI, the eval) this process. Each
 * reports its own progress, 0..1.
 */
export interface RepairRunners {
  separate(request: RepairSeparation, onProgress: (fraction: number) => void): Promise<SeparateFileResult>;
  denoise(
    request: { inputPath: string; inputProbe?: AudioProbe; targets: EncodeTarget[] },
    onProgress: (fraction: number) => void,
  ): Promise<DenoiseFileResult>;
}

/** Why a repair cannot run with the models at hand (a setting names none that can): the operator's to fix. */
export class RepairModelProblem extends Error {
  override readonly name = "RepairModelProblem";
}

export interface RepairVocalOptions {
  inputPath: string;
  probe: AudioProbe;
  /** the steps, in the order they run (`parseVocalRepairSteps`) */
  steps: readonly VocalRepairStep[];
  /** isolate the input's vocal first (the input is a mix) */
  isolateVocal: boolean;
  /** a folder of the caller's for the intermediate files */
  workDir: string;
  /** the installed separation models (`readInstalledModels`) */
  installed: readonly InstalledModel[];
  /** SEPARATION_MODEL_VOCALS and its ensemble (isolateVocal), SEPARATION_MODEL_VOCAL_SPLIT (dereverb) */
  models: { vocals: readonly string[]; vocalsEnsemble: EnsembleAlgorithm; vocalSplit: string };
  /** the repaired vocal's files (one encoder: a lossless file and an mp3 together) */
  targets: EncodeTarget[];
  runners: RepairRunners;
  onProgress?: (fraction: number) => void;
  /** told what each part did (the worker logs it) */
  onPart?: (part: RepairPart, detail: Record<string, unknown>) => void;
  signal: AbortSignal;
}

/** Each part of a repair's work, by its share of the whole (normalised over the parts that run): about their times on a CPU. */
const WEIGHTS = { isolate: 8, denoise: 1, dereverb: 6, encode: 0.5 } as const;
export type RepairPart = keyof typeof WEIGHTS;

/** Every intermediate file is float WAV at the input's rate: exact, never clipped, read back without ffmpeg. */
const WORK_FORMAT = { format: "wav", sampleFormat: "f32" } as const satisfies OutputSpec;

/**
 * The vocal of a mix, as a vocal separation that names no model plans it (the setting's models,
 * the split off): a float WAV at the input's rate under `workDir/isolate`. What `repairVocalFile`
 * and the harmony kind isolate with.
 */
export async function isolateVocalFile(options: {
  inputPath: string;
  probe: AudioProbe;
  workDir: string;
  installed: readonly InstalledModel[];
  models: { vocals: readonly string[]; vocalsEnsemble: EnsembleAlgorithm };
  runners: Pick<RepairRunners, "separate">;
  onProgress: (fraction: number) => void;
}): Promise<{ vocalPath: string; models: string[]; timings: SeparateFileResult["timings"] }> {
  const plan = planSeparationJob({
    kind: "vocal-separation",
    installed: options.installed,
    models: [],
    ensemble: null,
    settings: { models: options.models.vocals, ensemble: options.models.vocalsEnsemble, vocalSplit: VOCAL_SPLIT_OFF },
  });
  const result = await options.runners.separate(
    {
      inputPath: options.inputPath,
      inputProbe: options.probe,
      outDir: join(options.workDir, "isolate"),
      outputs: [WORK_FORMAT],
      ...plan.run,
    } as RepairSeparation,
    options.onProgress,
  );
  const pair = vocalPairOf(Object.keys(result.stems));
  const vocals = pair && result.stems[pair.vocals]?.wav;
  if (!vocals) throw new RepairModelProblem(`The separation model "${plan.models.join(",")}" produced no vocals`);
  return { vocalPath: vocals, models: plan.models, timings: result.timings };
}

/**
 * Repairs one vocal, as a `vocal-repair` job and `mixdown repair` run it: the vocal isolated first
 * when the input is a mix (the vocal separation, as a vocal separation that names no model plans
 * it, without the split), then each step in its fixed order, each writing a float WAV the next one
 * reads: `dereverb` separates the vocal split model's `reverb` stem and writes what it leaves of the
 * vocal (`writeRemainder`, as a vocal separation writes its lead), `denoise` runs RNNoise
 * (`denoiseFile`). The last file is encoded to `targets` at the input's rate. Returns the
 * separation models that served it.
 */
export async function repairVocalFile(options: RepairVocalOptions): Promise<{ models: string[] }> {
  const { probe, steps, workDir, runners, signal } = options;
  const parts: RepairPart[] = [...(options.isolateVocal ? (["isolate"] as const) : []), ...steps, "encode"];
  const total = parts.reduce((sum, p) => sum + WEIGHTS[p], 0);
  const progress = (part: RepairPart) => {
    const before = parts.slice(0, parts.indexOf(part)).reduce((sum, p) => sum + WEIGHTS[p], 0);
    return (fraction: number) => options.onProgress?.(Math.min(0.99, (before + fraction * WEIGHTS[part]) / total));
  };
  const models: string[] = [];
  let current = { inputPath: options.inputPath, inputProbe: probe as AudioProbe | undefined };
  if (options.isolateVocal) {
    const isolated = await isolateVocalFile({ ...options, onProgress: progress("isolate") });
    options.onPart?.("isolate", { models: isolated.models, timings: isolated.timings });
    models.push(...isolated.models);
    current = { inputPath: isolated.vocalPath, inputProbe: undefined };
  }
  for (const step of steps) {
    signal.throwIfAborted();
    const out = join(workDir, `${step}.wav`);
    const report = progress(step);
    if (step === "denoise") {
      const result = await runners.denoise({ ...current, targets: [{ ...WORK_FORMAT, path: out }] }, report);
      options.onPart?.("denoise", { frames: result.frames, voicedShare: result.voicedShare });
    } else {
      const split = resolveVocalSplit(options.models.vocalSplit, options.installed);
      if (!split.model) throw new RepairModelProblem(`dereverb cannot run: ${split.reason}`);
      const result = await runners.separate(
        {
          ...current,
          modelName: split.model.name,
          manifests: [split.model.manifest],
          outDir: join(workDir, "dereverb"),
          outputs: [WORK_FORMAT],
          stems: ["reverb"],
        },
        (f) => report(f * 0.95),
      );
      const reverb = result.stems.reverb?.wav;
      if (!reverb) throw new RepairModelProblem(`The vocal split model "${split.model.name}" produced no reverb stem`);
      await writeRemainder(current.inputPath, [reverb], [{ ...WORK_FORMAT, path: out }], signal);
      options.onPart?.("dereverb", { model: split.model.name, timings: result.timings });
      models.push(split.model.name);
    }
    current = { inputPath: out, inputProbe: undefined };
  }
  await encodeStereoPcm(decodeToPcm(current.inputPath, { sampleRate: probe.sampleRate, signal }), {
    inputSampleRate: probe.sampleRate,
    targets: options.targets,
    signal,
  });
  progress("encode")(1);
  return { models };
}
