/** What every family's manifest has, whatever else its architecture needs. */
export interface ManifestBase {
  name: string;
  /** the family that reads the rest of the manifest and runs the model */
  architecture: string;
  /** model file, relative to the manifest's directory */
  file: string;
  /** the model's rate; inputs are resampled to it and outputs back */
  sampleRate: number;
}

export class ManifestError extends Error {
  override readonly name = "ManifestError";
  readonly source: string;

  constructor(source: string, message: string) {
    super(`${source}: ${message}`);
    this.source = source;
  }
}

/**
 * onnxruntime's graph optimisation levels, as a manifest names them. `all` (onnxruntime's own
 * default, and what python-audio-separator runs) adds the layout transformations: convolutions in
 * blocked (NCHWc) layout, with reorder nodes around them. Those are faster for wide convolutions
 * but hold more memory during a run; `extended` stops before them.
 */
export const GRAPH_OPTIMIZATION_LEVELS = ["disabled", "basic", "extended", "all"] as const;
export type GraphOptimizationLevel = (typeof GRAPH_OPTIMIZATION_LEVELS)[number];

/** Name of the stem derived as mixture − vocals for multi-stem models. */
export const BACKING_STEM = "backing";

/** Stem names become file names (`vocals.wav`), so they are kept to a safe alphabet. */
const STEM_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/**
 * Typed readers over one manifest object, each throwing a ManifestError that
 * names `source`, so every family words its complaints the same way.
 */
export function manifestFields(m: Record<string, unknown>, source: string) {
  const fail = (message: string): never => {
    throw new ManifestError(source, message);
  };
  return {
    fail,
    string(key: string): string {
      const v = m[key];
      if (typeof v !== "string" || v.length === 0) return fail(`"${key}" must be a non-empty string`);
      return v;
    },
    integer(key: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
      const v = m[key];
      if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
        return fail(`"${key}" must be an integer in ${min}..${max}`);
      return v;
    },
    stemName(value: unknown, what: string): string {
      if (typeof value !== "string" || !STEM_NAME.test(value))
        return fail(`${what} must be a stem name (letters, digits, _ or -), got ${JSON.stringify(value)}`);
      return value;
    },
  };
}
