export { MATCHERING_DEFAULTS, matcheringConfig, type MatcheringConfig, type MatcheringLimiterConfig } from "./config.ts";
export { matchReference, MatcheringInputError, type MatcheringRun, type MatcheringSummary } from "./matchering.ts";
export {
  LOUDNESS_TARGET_DEFAULTS,
  LOUDNESS_TARGET_RANGES,
  loudnormApplyFilter,
  loudnormMeasureFilter,
  measureForLoudnorm,
  normalizeLoudness,
  parseLoudnormReport,
  type LoudnessOutput,
  type LoudnessTarget,
  type LoudnormReport,
} from "./loudnorm.ts";
