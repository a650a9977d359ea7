import { loadConfig } from "@mixdown/config";
import { resolve } from "node:path";
import { applyMigrations, registerVoiceCatalogue, RunningJobRepository } from "@mixdown/db";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { startReconciler } from "@mixdown/queue";
import { buildApp } from "./app.ts";

/** The API process: migrate (AUTO_MIGRATE), listen on PORT, reconcile queue entries, stop cleanly on SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig();
  if (config.AUTO_MIGRATE) await applyMigrations(config.DATABASE_URL);
  const app = await buildApp(config);
  const { ctx } = app;
  // The built-in voices and instruments of MODELS_DIR/voices, as public models (the worker does the same).
  await catalogueRows(resolve(config.MODELS_DIR))
    .then((rows) => registerVoiceCatalogue(ctx.prisma, rows))
    .catch((err: Error) => app.log.warn({ err: err.message }, "could not register the default voices"));
  const reconciler = startReconciler(
    {
      queues: ctx.queues,
      // A row the reconciler ends `error` may owe a webhook (queued at once rather than on the next pass) and is a job event.
      source: new RunningJobRepository(ctx.prisma, ctx.jobTableOptions),
      graceSeconds: config.RECONCILE_GRACE_SECONDS,
      log: app.log,
    },
    config.RECONCILE_INTERVAL_SECONDS * 1000,
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "shutting down");
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    await reconciler.stop();
    await app.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  // `mixdown up` died (its end of our stdin closed): stop as on SIGTERM, within 5 s at most.
  if (config.STOP_WHEN_STDIN_CLOSES) {
    process.stdin.once("close", () => {
      setTimeout(() => process.exit(1), 5_000).unref();
      void stop("stdin closed (the parent process is gone)");
    });
    process.stdin.resume();
  }

  const address = await app.listen({ host: config.HOST, port: config.PORT });
  app.log.info({ address }, "Mixdown API listening");
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
