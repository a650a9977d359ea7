export { ManifestError, BACKING_STEM, type ManifestBase } from "./manifest.ts";
export { parseMdxManifest, type MdxManifest } from "./families/mdx/manifest.ts";
export {
  parseManifest,
  outputStemNames,
  readsInputOnce,
  knownArchitectures,
  type SeparationManifest,
  type SeparationModel,
} from "./families/index.ts";
export type { SeparationFamily, FamilyModel, FamilyStreamOptions } from "./families/family.ts";
export {
  ModelLoadError,
  ProviderUnavailableError,
  type InferenceOptions,
  type ExecutionProvider,
  type ProviderFallback,
} from "./inference-options.ts";
export {
  modelProcessEnv,
  runsOnJemalloc,
  cpuArenaEnabled,
  jemallocPath,
  JEMALLOC_CONF,
  MODEL_ALLOCATORS,
  type ModelAllocator,
} from "./allocator.ts";
export { MdxModel } from "./families/mdx/model.ts";
export {
  readInstalledModels,
  vocalPairOf,
  modelServes,
  ensembleStemsFor,
  type InstalledModel,
  type InstalledModels,
  type SeparationJobKindName,
} from "./installed-models.ts";
export { ModelRegistry, UnknownModelError, type ModelRegistryOptions } from "./model-registry.ts";
export { MdxStft, MDX_ZEROED_LOW_BINS, type MdxStftConfig } from "./families/mdx/stft.ts";
export { HelperThreadStft, stftHelperRequests, type HelperThreadStftOptions } from "./families/mdx/helper-thread-stft.ts";
export { createRealFft, pffftSupports, type RealFft } from "./real-fft.ts";
export { TorchStft, type TorchStftConfig, type TorchSpectrum } from "./stft.ts";
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
export { splitStemStream, type StemSplit } from "./split-stream.ts";
export { EnsembleMixer, ENSEMBLE_N_FFT, ENSEMBLE_HOP } from "./ensemble.ts";
export {
  ENSEMBLE_ALGORITHMS,
  DEFAULT_ENSEMBLE,
  isEnsembleAlgorithm,
  parseModelList,
  type EnsembleAlgorithm,
  type EnsembleStem,
} from "./ensemble-names.ts";
export {
  separateEnsemble,
  combineStemFiles,
  commonStems,
  type SeparateEnsembleOptions,
  type SeparateEnsembleResult,
} from "./separate-ensemble.ts";
