export { parseMdxManifest, outputStemNames, ManifestError, BACKING_STEM, type MdxManifest } from "./manifest.ts";
export {
  MdxModel,
  ModelLoadError,
  ProviderUnavailableError,
  type InferenceOptions,
  type ExecutionProvider,
  type ProviderFallback,
} from "./mdx-model.ts";
export {
  readSeparationModels,
  vocalPairOf,
  modelServes,
  type SeparationModelEntry,
  type SeparationModelCatalog,
  type SeparationJobKindName,
} from "./model-catalog.ts";
export { ModelRegistry, UnknownModelError, type ModelRegistryOptions, type ModelListing } from "./model-registry.ts";
export { MdxStft, MDX_ZEROED_LOW_BINS, type MdxStftConfig } from "./mdx-stft.ts";
export { HelperThreadStft, type HelperThreadStftOptions } from "./helper-thread-stft.ts";
export { createRealFft, pffftSupports, type RealFft } from "./real-fft.ts";
export { ComplexFft } from "./fft.ts";
export {
  separateStream,
  selectStems,
  emptyTimings,
  DEFAULT_OVERLAP,
  DEFAULT_BATCH_SIZE,
  type SeparateStreamOptions,
  type SeparatedBlock,
  type SeparationProgress,
  type SeparationTimings,
} from "./separate-stream.ts";
export {
  separateFile,
  type SeparateFileOptions,
  type SeparateFileResult,
  type FileSeparationTimings,
  type OutputSpec,
  type OutputFormat,
} from "./separate-file.ts";
