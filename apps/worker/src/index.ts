export { startWorkerApp, selectQueues, type WorkerApp } from "./worker-app.ts";
export { TaskThreadPool, TaskFailure, serveTasks } from "./task-threads.ts";
