export { startWorkerApp, selectQueues, type WorkerApp } from "./worker-app.ts";
export { TaskThreadPool, serveTasks } from "./task-threads.ts";
export {
  JobRunner,
  type JobContext,
  type JobEnded,
  type JobEndedListener,
  type JobHandler,
  type JobHandlerFactories,
} from "./run-job.ts";
