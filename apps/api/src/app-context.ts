import type { Config } from "@mixdown/config";
import type { ApiKeyRepository, JobTableOptions, PrismaClient, ResourceDeletions } from "@mixdown/db";
import type { JobQueues } from "@mixdown/queue";
import type { JobEventHub } from "./events/job-event-hub.ts";
import type { IdempotentCreates } from "./idempotency/idempotent-creates.ts";
import type { ApiMetrics } from "./metrics/api-metrics.ts";
import type { ObjectStorage } from "@mixdown/storage";
import type { WebhookAddressPolicy } from "@mixdown/webhooks";
import type { VoiceModelImportService } from "./voice-models/voice-model-import.ts";
import type { VoiceModelService } from "./voice-models/voice-model-service.ts";

export { API_PREFIX } from "@mixdown/records";

/** What route plugins get: the configuration and the app-wide services (a job kind's own service comes with its routes, `kinds/`). */
export interface AppContext {
  config: Config;
  prisma: PrismaClient;
  queues: JobQueues;
  storage: ObjectStorage;
  apiKeys: ApiKeyRepository;
  models: VoiceModelService;
  modelImports: VoiceModelImportService;
  idempotency: IdempotentCreates;
  /** Deletions of jobs and voice models, and the sweep that finishes those cut short. */
  deletions: ResourceDeletions;
  /** Which addresses `webhookUrl`s may reach (WEBHOOK_DENIED_NETWORKS). */
  webhookPolicy: WebhookAddressPolicy;
  /** The job events this process reads for its event streams, and appends its own writes' to. */
  jobEvents: JobEventHub;
  /** What every job table this process writes is built with: owed webhooks queued, changes appended to the job events. */
  jobTableOptions: JobTableOptions;
  /** Absent when METRICS_ENABLED is false. */
  metrics?: ApiMetrics;
}
