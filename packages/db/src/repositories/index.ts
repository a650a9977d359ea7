export type { Page, PageRequest } from "./paging.ts";
export { SeparationJobRepository, type NewSeparationJob } from "./separation-jobs.ts";
export {
  VoiceConversionJobRepository,
  type NewVoiceConversionJob,
  type VoiceConversionJobWithModel,
} from "./voice-conversion-jobs.ts";
export { VoiceBlendJobRepository, type NewVoiceBlendJob } from "./voice-blend-jobs.ts";
export { VoiceModelRepository, type NewVoiceModel } from "./voice-models.ts";
export { RunningJobRepository, VOICE_MODEL_LACKING_MEDIA, type RunningJobRef } from "./running-jobs.ts";
export { VoiceModelMediaRepository, type RenderedVoiceMedia } from "./voice-model-media.ts";
export { SeparationJobRunRepository, type SeparationOutputs, type StoredStem } from "./separation-job-runs.ts";
export { HealthRepository } from "./health.ts";
export {
  VoiceBlendJobRunRepository,
  type RunnableVoiceBlend,
  type VoiceBlendOutput,
} from "./voice-blend-job-runs.ts";
export { VoiceConversionJobRunRepository, type VoiceConversionOutputs } from "./voice-conversion-job-runs.ts";
export { registerVoiceCatalogue, type CatalogueEntry } from "./voice-model-catalogue.ts";
export { VoiceModelImportRepository } from "./voice-model-imports.ts";
export {
  IdempotencyKeyRepository,
  type IdempotencyClaim,
  type IdempotentResource,
} from "./idempotency-keys.ts";
export { ServiceCountRepository, type CountedJobKind } from "./service-counts.ts";
