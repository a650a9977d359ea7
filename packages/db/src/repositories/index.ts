export type { Page, PageRequest } from "./paging.ts";
export * from "./kinds/index.ts";
export { VoiceModelRepository, voiceModelStorage, type NewVoiceModel } from "./voice-models.ts";
export { RunningJobRepository } from "./running-jobs.ts";
export { JobRetention, ownedStorage, type ExpiringJob, type JobFiles, type RetentionStep } from "./job-files.ts";
export {
  endInTransaction,
  endJobRow,
  groupByStatus,
  statusTable,
  type EndedJob,
  type JobChange,
  type JobChangeListener,
  type JobCount,
  type JobTable,
  type JobTableRows,
  type JobTableOptions,
  type OwnedJob,
  type OwnedStorage,
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
export { BatchRepository, type BatchWithJobs, type NewBatch, type RejectedFile } from "./batches.ts";
export { HealthRepository } from "./health.ts";
export { registerVoiceCatalogue, type VoiceCatalogueEntry } from "./voice-model-catalogue.ts";
export { VoiceModelImportRepository } from "./voice-model-imports.ts";
export { IdempotencyKeyRepository, type IdempotencyClaim, type IdempotentResource } from "./idempotency-keys.ts";
export { ServiceCountRepository, type CountedJobKind } from "./service-counts.ts";
export {
  ResourceDeletions,
  VoiceModelInUseError,
  type DeletableKind,
  type DeletionEffects,
  type PurgeReport,
} from "./deletions.ts";
export {
  parseUsageMonth,
  totalOf,
  usageMonthOf,
  UsageRepository,
  type KeyUsage,
  type KindUsage,
  type QuotaRefusal,
  type QuotaState,
  type UsageMonth,
} from "./usage.ts";
export { ModelInstallRepository, modelInstallTable, type ModelInstalled } from "./model-installs.ts";
