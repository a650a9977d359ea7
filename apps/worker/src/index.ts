export { startWorkerApp, selectQueues, type WorkerApp } from "./worker-app.ts";
export { TaskThreadPool, serveTasks } from "./task-threads.ts";
export { WORKER_KINDS, checkWorkerKinds, type WorkerKinds } from "./kinds/index.ts";
export type { WorkerKind, WorkerKindContext } from "./kinds/context.ts";
export { JobRunner, type JobContext, type JobEnded, type JobEndedListener, type JobHandler } from "./run-job.ts";
