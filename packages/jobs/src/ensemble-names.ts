/**
 * The ways a separation ensemble combines its members' outputs of one stem (see
 * `packages/separation/src/ensemble.ts` for each one's definition and the upstream behaviour it
 * matches). Part of what a separation job may ask for, so it lives with the job catalogue: the
 * config schema, the API and the CLI validate names with it without loading the engine.
 */
export const ENSEMBLE_ALGORITHMS = [
  "avg_wave",
  "median_wave",
  "min_mag",
  "max_mag",
  "avg_mag",
  "uvr_max_spec",
  "uvr_min_spec",
] as const;

export type EnsembleAlgorithm = (typeof ENSEMBLE_ALGORITHMS)[number];

/** python-audio-separator's default (`--ensemble_algorithm`), and Mixdown's. */
export const DEFAULT_ENSEMBLE: EnsembleAlgorithm = "avg_wave";

export function isEnsembleAlgorithm(value: string): value is EnsembleAlgorithm {
  return (ENSEMBLE_ALGORITHMS as readonly string[]).includes(value);
}

/**
 * A `model` value as a list of names: `"vocals, stems"` -> `["vocals", "stems"]`. Empty names
 * (`"a,,b"`, a trailing comma) are kept as "" so the caller refuses them by name.
 */
export function parseModelList(value: string): string[] {
  return value.split(",").map((name) => name.trim());
}
