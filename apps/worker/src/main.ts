// onnxruntime's telemetry off for the whole process, set on this (the main) thread: the model
// threads create the sessions, and a thread's process.env does not reach the process's environment.
import "@mixdown/separation/ort";
import { pino } from "pino";
import { loadConfig } from "@mixdown/config";
import { startHealthServer } from "./health.ts";
import { startWorkerApp } from "./worker-app.ts";
import { WorkerMetrics } from "./worker-metrics.ts";

const config = loadConfig();
const logger = pino({ level: config.LOG_LEVEL, base: { service: "worker", pid: process.pid } });

let shuttingDown = false;
const metrics = config.METRICS_ENABLED ? new WorkerMetrics() : undefined;
/** Set in the environment of a worker that restarted itself after idling (see restartCold). */
const COLD = "MIXDOWN_WORKER_RESTARTED_IDLE";
const cold = process.env[COLD] === "1";
const app = await startWorkerApp(config, logger, metrics, { cold, onModelsIdle: () => restartCold() }).catch((err: Error) => {
  logger.fatal({ err: err.message }, "worker could not start");
  process.exit(1);
});
const health =
  config.WORKER_HEALTH_PORT > 0
    ? await startHealthServer(config.WORKER_HEALTH_PORT, config.HOST, {
        queues: app.queues,
        activeJobs: () => app.activeJobs(),
        shuttingDown: () => shuttingDown,
        metrics: metrics && { registry: metrics.registry, token: config.METRICS_TOKEN },
      })
    : undefined;

// SIGTERM: stop taking jobs and let the running ones finish (BullMQ hands any job that still
// cannot finish to another worker once its lock lapses). A second signal exits at once.
const shutDown = (signal: string) => {
  if (shuttingDown) process.exit(1);
  shuttingDown = true;
  logger.info({ signal, activeJobs: app.activeJobs() }, "shutting down: finishing running jobs");
  app
    .close()
    .then(() => {
      health?.close();
      logger.info("worker stopped");
      process.exit(0);
    })
    .catch((err: Error) => {
      logger.error({ err: err.message }, "shutdown failed");
      process.exit(1);
    });
};
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => shutDown(signal));

/**
 * Every model this worker loaded has been idle WORKER_MODEL_IDLE_SECONDS and its threads are gone,
 * but the memory they used stays with the process: jemalloc, which the models run on, keeps freed
 * pages mapped (packages/separation/src/allocator.ts says why). So the worker stops taking jobs,
 * lets any running one finish, and replaces itself (execve: the same pid, stdin, stdout and
 * environment, so `up` and container runtimes see nothing) with a fresh process that loads its
 * models only when a job needs them.
 */
function restartCold(): void {
  if (shuttingDown) return;
  shuttingDown = true;
  const before = process.memoryUsage.rss();
  logger.info({ rssMb: Math.round(before / 1e6) }, "models idle: restarting to give their memory back");
  app
    .close()
    .then(
      () =>
        new Promise<void>((resolve) => {
          if (!health) return resolve();
          health.close(() => resolve());
          health.closeAllConnections();
        }),
    )
    .then(() => {
      process.execve!(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
        ...process.env,
        [COLD]: "1",
      });
    })
    .catch((err: Error) => {
      logger.error({ err: err.message }, "restart after idling failed");
      process.exit(1);
    });
}
if (cold)
  logger.info({ rssMb: Math.round(process.memoryUsage.rss() / 1e6) }, "restarted after idling: models load with the next job");

// `mixdown up` died (its end of our stdin closed): its Redis and PostgreSQL go with it, so a
// running job cannot finish here; what it had left is the next worker's, once its lock lapses.
if (config.STOP_WHEN_STDIN_CLOSES) {
  process.stdin.once("close", () => {
    setTimeout(() => process.exit(1), 5_000).unref();
    if (!shuttingDown) shutDown("stdin closed (the parent process is gone)");
  });
  process.stdin.resume();
}
