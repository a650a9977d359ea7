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
 * (`"a,,b"`, a trailing comma) are kept as "" so the caller refuses them by name
 * (modelListProblem).
 */
export function parseModelList(value: string): string[] {
  return value.split(",").map((name) => name.trim());
}

/**
 * What is wrong with a list of model names as written, in the words that follow the name of the
 * field or setting that gave it (`model "a,,b" has an empty model name`): an empty name, or a name
 * given twice. Null when neither. The API's form, the CLI's `--model` and the config's model
 * settings all word it so. Whether each name is installed is the installed models' to say.
 */
export function modelListProblem(value: string, names: readonly string[] = parseModelList(value)): string | null {
  if (names.some((name) => name === "")) return `${JSON.stringify(value)} has an empty model name`;
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) return `names "${twice}" twice: an ensemble's models must differ`;
  return null;
}
