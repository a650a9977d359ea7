// The harmony's runners in this process (`mixdown harmony`, `pnpm eval:harmony`): the isolation
// loads onnxruntime through the separation models, so this is its own export
// (`@mixdown/harmony/in-process`), never loaded by the worker's harmony threads.
import { inProcessRunners } from "@mixdown/repair/in-process";
import type { ModelRegistry } from "@mixdown/separation";
import { harmonizeVocal } from "./harmonize.ts";
import type { HarmonyRunners } from "./harmonize-file.ts";

/** Runners for `harmonizeFile` in this process: one separation model at a time from `registry`, the harmony here. */
export function inProcessHarmonyRunners(registry: ModelRegistry, signal: AbortSignal): HarmonyRunners {
  return {
    separate: inProcessRunners(registry, signal).separate,
    harmonize: (request, onProgress) => harmonizeVocal(request, { onProgress, signal }),
  };
}
