export { analyzeAudioFile, type AnalyzeOptions, type AudioAnalysis } from "./analyze.ts";
export { decodeMono } from "./decode-mono.ts";
export {
  ESSENTIA_SAMPLE_RATE,
  essentiaVersion,
  estimateKey,
  estimateTempo,
  type KeyEstimate,
  type TempoEstimate,
} from "./essentia.ts";
export { measureLoudness, parseEbur128Summary, type Loudness } from "./loudness.ts";
