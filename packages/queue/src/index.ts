export * from "./jobs.ts";
export { createQueues, defaultJobOptions, JobQueues, MAX_PRIORITY, type EnqueueOptions, type QueueOptions } from "./queues.ts";
export {
  Reconciler,
  startReconciler,
  type ReconcileResult,
  type ReconcileSource,
  type ReconcilerOptions,
  type RunningJob,
} from "./reconciler.ts";
export {
  cancelChannel,
  parseCancelNotice,
  subscribeToCancels,
  type CancelNotice,
  type CancelSubscription,
} from "./job-cancels.ts";
export {
  MAINTENANCE_QUEUE,
  MAINTENANCE_TASKS,
  startMaintenance,
  type Maintenance,
  type MaintenanceOptions,
  type MaintenanceTask,
} from "./maintenance.ts";
export {
  asStreamId,
  compareStreamIds,
  JobEventLog,
  jobEventsKey,
  parseJobEvent,
  tailJobEvents,
  type JobEvent,
  type JobEventStatus,
  type JobEventTail,
  type StoredJobEvent,
} from "./job-events.ts";
