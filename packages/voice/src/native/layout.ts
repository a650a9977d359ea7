/**
 * The fixed frame layout of every native voice model. Fixed on purpose: every native model has
 * the same initializer names and shapes, so voices blend by averaging their weights.
 */
export const NATIVE_LAYOUT = {
  sampleRate: 44100,
  nFft: 2048,
  hop: 512,
  bands: 64,
  fMin: 50,
  fMax: 16000,
} as const;

export const NATIVE_BINS = NATIVE_LAYOUT.nFft / 2 + 1;

/** The weights that are the voice: per-band mean and spread of the log-mel envelope, and loudness. */
export const NATIVE_WEIGHTS = ["target_mean", "target_std", "target_level"] as const;

export const NATIVE_INPUTS = ["envelope", "source_mean", "source_std", "strength", "frame_level", "volume_mix"] as const;
export const NATIVE_OUTPUTS = ["gain", "level_gain"] as const;

/** Natural-log power units: 10 dB is ln(10) ≈ 2.303. */
export const dbToNepers = (db: number): number => (db / 10) * Math.LN10;
