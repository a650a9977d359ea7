// A voice conversion's options, declared once for the API (the form's ranges and defaults, what it
// stores on the row) and the worker (what it reads back). Imports nothing heavy: the API loads it
// without the inference runtime.
import { EffectChainError, parseEffectChain, type EffectChain } from "./effects-schema.ts";

/** The conversion's numeric controls, with their ranges and the defaults of a request that leaves them out. */
export const CONVERSION_CONTROLS = {
  conversionStrength: { min: 0, max: 1, default: 0.5 },
  modelVolumeMix: { min: 0, max: 1, default: 0.5 },
  pitchShift: { min: -24, max: 24, default: 0 },
} as const;

export type ConversionControlName = keyof typeof CONVERSION_CONTROLS;

/** Everything a conversion takes besides its audio and its model. */
export interface ConversionParams {
  /** 0 keeps the input's own character, 1 is the full target voice. */
  conversionStrength: number;
  /** 0 keeps the input's loudness envelope, 1 follows the model's. */
  modelVolumeMix: number;
  /** Semitones; engines that take f0 as an input apply it themselves (`shiftsPitch`). */
  pitchShift: number;
  pre: EffectChain;
  post: EffectChain;
}

/** What a conversion uses for the options its request left out (TTS jobs and every model's demo, too). */
export const CONVERSION_DEFAULTS: Readonly<ConversionParams> = Object.freeze({
  conversionStrength: CONVERSION_CONTROLS.conversionStrength.default,
  modelVolumeMix: CONVERSION_CONTROLS.modelVolumeMix.default,
  pitchShift: CONVERSION_CONTROLS.pitchShift.default,
  pre: {},
  post: {},
});

/** A row's stored `params` that cannot be a conversion's: the worker fails such a job, it does not guess. */
export class StoredParamsError extends Error {
  override readonly name = "StoredParamsError";
}

/**
 * The `params` a row stored, read back and checked as the API checked them: every control a number
 * within its range, `pre` and `post` effect chains of the catalogue. A control the row lacks takes
 * its default (rows stored before it existed).
 */
export function readStoredConversionParams(stored: unknown): ConversionParams {
  if (typeof stored !== "object" || stored === null || Array.isArray(stored))
    throw new StoredParamsError(`the stored conversion params are not an object (${JSON.stringify(stored)})`);
  const row = stored as Record<string, unknown>;
  const controls = {} as Record<ConversionControlName, number>;
  for (const [name, range] of Object.entries(CONVERSION_CONTROLS) as Array<
    [ConversionControlName, { min: number; max: number; default: number }]
  >) {
    const value = row[name] ?? range.default;
    if (typeof value !== "number" || !Number.isFinite(value) || value < range.min || value > range.max)
      throw new StoredParamsError(
        `the stored ${name} ${JSON.stringify(value)} is not a number from ${range.min} to ${range.max}`,
      );
    controls[name] = value;
  }
  const chain = (field: "pre" | "post"): EffectChain => {
    try {
      return parseEffectChain(field, row[field] === undefined ? undefined : JSON.stringify(row[field]));
    } catch (err) {
      if (err instanceof EffectChainError) throw new StoredParamsError(`the stored ${field}: ${err.message}`);
      throw err;
    }
  };
  return { ...controls, pre: chain("pre"), post: chain("post") };
}
