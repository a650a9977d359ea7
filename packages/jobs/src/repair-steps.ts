/**
 * The steps a vocal repair can run, in the order they always run whatever order the caller named
 * them in: the room first, then the noise. Measured (`pnpm eval:repair`, docs/benchmarks.md): on
 * reverberant speech under pink noise, dereverb then denoise gains 1.7 dB SI-SDR, denoise then
 * dereverb 0.9 dB (RNNoise leaves the reverb tail it cannot tell from the voice, and the vocal
 * split sees a cleaner vocal). Spelled once: the API's form, the records, the worker and the CLI
 * read this list.
 */
export const VOCAL_REPAIR_STEPS = ["dereverb", "denoise"] as const;
export type VocalRepairStep = (typeof VOCAL_REPAIR_STEPS)[number];

export function isVocalRepairStep(name: string): name is VocalRepairStep {
  return (VOCAL_REPAIR_STEPS as readonly string[]).includes(name);
}

/**
 * A caller's list of steps (`denoise,dereverb`, spaces and repeats allowed) in the order they run,
 * or the names that are no step; an empty list is a problem too.
 */
export function parseVocalRepairSteps(list: string): { steps: VocalRepairStep[]; unknown: string[] } {
  const names = list
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !isVocalRepairStep(name));
  return { steps: VOCAL_REPAIR_STEPS.filter((step) => names.includes(step)), unknown };
}
