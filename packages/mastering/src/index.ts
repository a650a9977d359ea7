export {
  LOUDNESS_TARGET_DEFAULTS,
  LOUDNESS_TARGET_RANGES,
  MATCHERING_DEFAULTS,
  matcheringConfig,
  type LoudnessTarget,
  type MatcheringConfig,
  type MatcheringLimiterConfig,
} from "./config.ts";
export { matchReference, MatcheringInputError, type MatcheringRun, type MatcheringSummary } from "./matchering.ts";
export {
  loudnormApplyFilter,
  loudnormMeasureFilter,
  measureForLoudnorm,
  normalizeLoudness,
  parseLoudnormReport,
  type LoudnessOutput,
  type LoudnormReport,
} from "./loudnorm.ts";
