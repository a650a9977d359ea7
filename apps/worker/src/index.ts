export { startWorkerApp, selectQueues, type WorkerApp } from "./worker-app.ts";
export { SeparationPool, SeparationFailure } from "./separation-pool.ts";
