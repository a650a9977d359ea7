import type { AudioProbe } from "@mixdown/audio";
import { isolateVocalFile, type RepairRunners } from "@mixdown/repair";
import type { EnsembleAlgorithm, InstalledModel } from "@mixdown/separation/installed-models";
import type { HarmonizeRequest, HarmonizeResult } from "./harmonize.ts";

/** Where a harmony's heavy parts run: the worker's threads, or (the CLI, the eval) this process. Each reports its progress, 0..1. */
export interface HarmonyRunners extends Pick<RepairRunners, "separate"> {
  harmonize(request: HarmonizeRequest, onProgress: (fraction: number) => void): Promise<HarmonizeResult>;
}

export interface HarmonizeFileOptions extends Omit<HarmonizeRequest, "vocalPath" | "mixWithPath" | "probe"> {
  inputPath: string;
  probe: AudioProbe;
  /** the input is a mix: isolate its vocal first (the vocal separation's models) */
  isolateVocal: boolean;
  /** a folder of the caller's for the intermediate files */
  workDir: string;
  /** the installed separation models (`readInstalledModels`; only read when isolating) */
  installed: readonly InstalledModel[];
  /** SEPARATION_MODEL_VOCALS and its ensemble */
  models: { vocals: readonly string[]; vocalsEnsemble: EnsembleAlgorithm };
  runners: HarmonyRunners;
  onProgress?: (fraction: number) => void;
  signal: AbortSignal;
}

/**
 * A harmony as the `harmony` job and `mixdown harmony` make it: the vocal isolated first when the
 * input is a mix (as a vocal repair isolates it), then `harmonizeVocal` on it, the harmony mixed
 * with the input as it came. Returns what `harmonizeVocal` found and the separation models used.
 */
export async function harmonizeFile(options: HarmonizeFileOptions): Promise<HarmonizeResult & { models: string[] }> {
  const { inputPath, probe, runners } = options;
  // the parts' shares of the time: a separation takes most of it
  const isolateShare = options.isolateVocal ? 0.7 : 0;
  let vocalPath = inputPath;
  let models: string[] = [];
  if (options.isolateVocal) {
    const isolated = await isolateVocalFile({
      inputPath,
      probe,
      workDir: options.workDir,
      installed: options.installed,
      models: options.models,
      runners,
      onProgress: (f) => options.onProgress?.(f * isolateShare),
    });
    vocalPath = isolated.vocalPath;
    models = isolated.models;
  }
  options.signal.throwIfAborted();
  const result = await runners.harmonize(
    {
      vocalPath,
      mixWithPath: inputPath,
      probe,
      key: options.key,
      interval: options.interval,
      direction: options.direction,
      harmonyTargets: options.harmonyTargets,
      mixTargets: options.mixTargets,
    },
    (f) => options.onProgress?.(Math.min(0.99, isolateShare + f * (1 - isolateShare))),
  );
  return { ...result, models };
}
