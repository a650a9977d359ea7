import { pino } from "pino";
import { loadConfig } from "@mixdown/config";
import { startHealthServer } from "./health.ts";
import { startWorkerApp } from "./worker-app.ts";
import { WorkerMetrics } from "./worker-metrics.ts";

const config = loadConfig();
const logger = pino({ level: config.LOG_LEVEL, base: { service: "worker", pid: process.pid } });

let shuttingDown = false;
const metrics = config.METRICS_ENABLED ? new WorkerMetrics() : undefined;
const app = await startWorkerApp(config, logger, metrics).catch((err: Error) => {
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

// `mixdown up` died (its end of our stdin closed): its Redis and PostgreSQL go with it, so a
// running job cannot finish here; what it had left is the next worker's, once its lock lapses.
if (config.STOP_WHEN_STDIN_CLOSES) {
  process.stdin.once("close", () => {
    setTimeout(() => process.exit(1), 5_000).unref();
    if (!shuttingDown) shutDown("stdin closed (the parent process is gone)");
  });
  process.stdin.resume();
}
