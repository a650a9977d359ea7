export type { ConversionControls, MonoSource, VoiceEngine } from "./voice-engine.ts";
export { loadVoiceEngine, type LoadVoiceEngineOptions } from "./load-engine.ts";
export {
  convertVoiceFile,
  type ConversionParams,
  type ConvertVoiceFileRequest,
  type ConvertVoiceFileResult,
} from "./pipeline.ts";
export { NativeVoiceEngine } from "./native/native-voice.ts";
export { buildNativeVoiceModel, monoBlocks, readMono } from "./native/build.ts";
export { measureVoiceStatsOf } from "./native/measure.ts";
export { writeNativeVoiceModel, type NativeVoiceWeights } from "./native/model-graph.ts";
export { NATIVE_LAYOUT, NATIVE_WEIGHTS } from "./native/layout.ts";
export { RvcVoiceEngine, coarsePitch, rvcPhone, type RvcEngineOptions, type RvcStageTimes } from "./rvc/rvc-voice.ts";
export {
  FeatureIndex,
  FeatureIndexError,
  inspectFeatureIndexFile,
  RVC_NEIGHBOURS,
  type FeatureIndexInfo,
  type SearchResult,
} from "./rvc/feature-index.ts";
export { IndexRetrieval } from "./rvc/index-retrieval.ts";
export { writeRvcSignatureModel, writeContentVecSignatureModel } from "./rvc/signature-models.ts";
export { RmvpePitch, rmvpeMel, rmvpeMelBasis, decodeRmvpe, RMVPE_RATE, RMVPE_HOP, RMVPE_THRESHOLD } from "./pitch/rmvpe.ts";
export { trackPitch, medianVoiced, contourShiftSemitones, type PitchTrackOptions } from "./pitch/yin.ts";
export {
  inspectVoiceModelFile,
  VoiceModelFileError,
  RVC_SIGNATURE,
  type VoiceModelFileInfo,
  type VoiceArchitecture,
} from "./model-file.ts";
export { effectChainFilter } from "./effect-filters.ts";
export { parseEffectChain, EffectChainError, PRE_EFFECTS, POST_EFFECTS, type EffectChain } from "./effects-schema.ts";
export { readVoiceCatalogue, catalogueRows, BUILTIN_FILE_PREFIX, type CatalogueVoice } from "./catalogue.ts";
export { mfccMean, mfccDistance, logMelFrames, type LogMelFrame } from "./dsp/mfcc.ts";
export {
  VoiceAssets,
  MissingVoiceAssetError,
  INSTALL_CONTENTVEC,
  INSTALL_RMVPE,
  type MissingVoiceAsset,
  type VoiceAssetSettings,
} from "./assets.ts";
