// Imports nothing: the API reads the defaults and ranges from here (`@mixdown/mastering/config`)
// without loading the implementation.

/**
 * Matchering's settings, with its defaults (matchering/defaults.py, `Config` and `LimiterConfig`):
 * times in seconds or milliseconds as upstream takes them.
 */
export interface MatcheringLimiterConfig {
  /** ms */
  attack: number;
  /** ms */
  hold: number;
  /** ms */
  release: number;
  attackFilterCoefficient: number;
  holdFilterCoefficient: number;
  releaseFilterCoefficient: number;
}

export interface MatcheringConfig {
  /** Hz: both inputs are resampled to it */
  internalSampleRate: number;
  /** s: longer inputs are refused */
  maxLength: number;
  /** s: the loudness analysis cuts the track into equal pieces no longer than this */
  maxPieceSize: number;
  /** the peak the output is limited to, linear */
  threshold: number;
  minValue: number;
  fftSize: number;
  linLogOversampling: number;
  rmsCorrectionSteps: number;
  lowessFrac: number;
  lowessDelta: number;
  limiter: MatcheringLimiterConfig;
}

export const MATCHERING_DEFAULTS: MatcheringConfig = Object.freeze({
  internalSampleRate: 44100,
  maxLength: 15 * 60,
  maxPieceSize: 15,
  threshold: (2 ** 15 - 61) / 2 ** 15,
  minValue: 1e-6,
  fftSize: 4096,
  linLogOversampling: 4,
  rmsCorrectionSteps: 4,
  lowessFrac: 0.0375,
  lowessDelta: 0.001,
  limiter: Object.freeze({
    attack: 1,
    hold: 1,
    release: 3000,
    attackFilterCoefficient: -2,
    holdFilterCoefficient: 7,
    releaseFilterCoefficient: 800,
  }),
});

/** Defaults overridden by `overrides` (the limiter's fields one by one). */
export function matcheringConfig(
  overrides: Partial<Omit<MatcheringConfig, "limiter">> & { limiter?: Partial<MatcheringLimiterConfig> } = {},
): MatcheringConfig {
  const config = { ...MATCHERING_DEFAULTS, ...overrides, limiter: { ...MATCHERING_DEFAULTS.limiter, ...overrides.limiter } };
  if (!Number.isInteger(config.fftSize) || config.fftSize < 2 || (config.fftSize & (config.fftSize - 1)) !== 0)
    throw new RangeError(`fftSize must be a power of two, got ${config.fftSize}`);
  if (!(config.maxPieceSize > config.fftSize / config.internalSampleRate && config.maxPieceSize < config.maxLength))
    throw new RangeError("maxPieceSize must be longer than one FFT frame and shorter than maxLength");
  if (!(config.threshold > config.minValue && config.threshold < 1)) throw new RangeError("threshold must be in (minValue, 1)");
  return config;
}

/** A streaming loudness target, as ffmpeg's `loudnorm` takes it (the loudness mode; `./loudnorm.ts`). */
export interface LoudnessTarget {
  /** integrated loudness, LUFS (loudnorm: -70 to -5) */
  integratedLufs: number;
  /** maximum true peak, dBTP (loudnorm: -9 to 0) */
  truePeakDb: number;
}

export const LOUDNESS_TARGET_DEFAULTS: LoudnessTarget = Object.freeze({ integratedLufs: -14, truePeakDb: -1 });
export const LOUDNESS_TARGET_RANGES = Object.freeze({
  integratedLufs: { minimum: -70, maximum: -5 },
  truePeakDb: { minimum: -9, maximum: 0 },
});
