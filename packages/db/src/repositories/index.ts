export type { Page, PageRequest } from "./paging.ts";
export { SeparationJobRepository, type NewSeparationJob } from "./separation-jobs.ts";
export {
  VoiceConversionJobRepository,
  type NewVoiceConversionJob,
  type VoiceConversionJobWithModel,
} from "./voice-conversion-jobs.ts";
export { VoiceBlendJobRepository, type NewVoiceBlendJob } from "./voice-blend-jobs.ts";
export { TtsJobRepository, type NewTtsJob, type TtsJobWithModel } from "./tts-jobs.ts";
export { ttsJobTable, type RunnableTts, type TtsOutputs } from "./tts-job-runs.ts";
export { VoiceModelRepository, type NewVoiceModel } from "./voice-models.ts";
export { RunningJobRepository } from "./running-jobs.ts";
export {
  endInTransaction,
  endJobRow,
  statusTable,
  type JobTable,
  type JobTableOptions,
  type JobTables,
  type RunningRow,
  type WebhookOwedListener,
} from "./job-table.ts";
export {
  queueOwedWebhooks,
  recordWebhookAttempt,
  webhookDeliveryTable,
  type WebhookDelivered,
  type WebhookDeliveryToSend,
  type WebhookJobRow,
} from "./webhook-deliveries.ts";
export { createJobTables, type JobRowTypes, type MixdownJobTables, type OutputOf, type RunnableOf } from "./job-tables.ts";
export {
  listModelsOwedMedia,
  VOICE_MODEL_LACKING_MEDIA,
  voiceModelMediaTable,
  type RenderedVoiceMedia,
} from "./voice-model-media.ts";
export {
  VOICE_MODEL_AWAITING_BUILD,
  voiceModelBuildTable,
  type BuiltVoiceModel,
  type VoiceModelToBuild,
} from "./voice-model-builds.ts";
export { separationJobTable, type SeparationOutputs, type StoredStem } from "./separation-job-runs.ts";
export { HealthRepository } from "./health.ts";
export { voiceBlendJobTable, type RunnableVoiceBlend, type VoiceBlendOutput } from "./voice-blend-job-runs.ts";
export {
  voiceConversionJobTable,
  type RunnableVoiceConversion,
  type VoiceConversionOutputs,
} from "./voice-conversion-job-runs.ts";
export { registerVoiceCatalogue, type CatalogueEntry } from "./voice-model-catalogue.ts";
export { VoiceModelImportRepository } from "./voice-model-imports.ts";
export { IdempotencyKeyRepository, type IdempotencyClaim, type IdempotentResource } from "./idempotency-keys.ts";
export { ServiceCountRepository, type CountedJobKind } from "./service-counts.ts";
