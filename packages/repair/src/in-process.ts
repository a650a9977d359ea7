// The repair's runners in this process (`mixdown repair`, `pnpm eval:repair`): loads onnxruntime
// through the separation models, so it is its own export (`@mixdown/repair/in-process`), never
// loaded by the worker's denoise threads.
import { ModelRegistry, separateFile } from "@mixdown/separation";
import { denoiseFile } from "./denoise.ts";
import type { RepairRunners } from "./repair-file.ts";

/**
 * Runners for `repairVocalFile` that run in this process: RNNoise, and one separation model at a
 * time loaded from `registry` (the vocal separation named by one model, the vocal split); an
 * ensemble is the service's (its worker combines the members on its separation threads).
 */
export function inProcessRunners(registry: ModelRegistry, signal: AbortSignal): RepairRunners {
  return {
    async separate(request, onProgress) {
      if (request.ensemble || request.split)
        throw new Error("an ensemble or a split in the same pass runs in the service's worker, not in this process");
      const model = await registry.load(request.manifests?.find((m) => m.name === request.modelName) ?? request.modelName);
      return separateFile({
        signal,
        inputPath: request.inputPath,
        ...(request.inputProbe ? { probe: request.inputProbe } : {}),
        model,
        outDir: request.outDir,
        outputs: request.outputs,
        ...(request.stems ? { stems: request.stems } : {}),
        onProgress: (p) => onProgress(p.fraction ?? 0),
      });
    },
    denoise: (request, onProgress) =>
      denoiseFile(request.inputPath, {
        signal,
        targets: request.targets,
        ...(request.inputProbe ? { probe: request.inputProbe } : {}),
        onProgress,
      }),
  };
}
