import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Config } from "@mixdown/config";
import {
  createJobTables,
  JobRetention,
  ResourceDeletions,
  createPrismaClient,
  listModelsOwedMedia,
  queueOwedWebhooks,
  registerVoiceCatalogue,
  RunningJobRepository,
  type JobChange,
  type PrismaClient,
} from "@mixdown/db";
import { concurrencyOf, QUEUE_GROUPS, queuesOf, type JobKind } from "@mixdown/jobs";
import { JobEventLog, MAINTENANCE_QUEUE, startMaintenance, startReconciler, JobQueues, subscribeToCancels } from "@mixdown/queue";
import { createStorage, RetryingStorage, type ObjectStorage } from "@mixdown/storage";
import { VoiceAssets } from "@mixdown/voice/assets";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { runsOnJemalloc } from "@mixdown/separation/allocator";
import { JobFolderKeeper } from "./job-folders.ts";
import { RetentionSweeper } from "./retention.ts";
import { JobRunner, type JobHandler } from "./run-job.ts";
import type { ThreadPool, WorkerKindContext } from "./kinds/context.ts";
import type { PoolOptions } from "./task-threads.ts";
import { checkWorkerKinds, WORKER_KINDS } from "./kinds/index.ts";
import { voiceConversionPoolFor, type VoiceConversionPool } from "./kinds/voice-conversion/protocol.ts";
import { createAudioAnalysisPool, type AudioAnalysisPool } from "./kinds/audio-analysis/protocol.ts";
import { VoiceModelFiles } from "./voice-model-files.ts";
import type { WorkerMetrics } from "./worker-metrics.ts";

export interface WorkerApp {
  /** Job kinds (queues) this process serves. */
  readonly queues: JobKind[];
  /** Jobs being processed right now. */
  activeJobs(): number;
  /** Owns every job's lifecycle: `onJobEnded` (webhooks, metrics) and `cancel` hang off it. */
  readonly runner: JobRunner;
  /** Stops taking jobs, lets the running ones finish, then releases everything. */
  close(): Promise<void>;
}

/**
 * The kinds WORKER_QUEUES names (kinds, or the catalogue's groups `all` and `gpu`), each checked
 * against the job kinds this worker has a handler for (every kind of the catalogue, unless
 * `available` says fewer): a worker configured for a kind it cannot run refuses to start rather
 * than leave those jobs waiting forever.
 */
export function selectQueues(list: string, available: readonly string[] = Object.keys(WORKER_KINDS)): JobKind[] {
  const { kinds, unknown } = queuesOf(list);
  const missing = [...unknown, ...kinds.filter((kind) => !available.includes(kind))];
  if (missing.length > 0) {
    throw new Error(
      `WORKER_QUEUES names queues this worker has no handler for: ${missing.join(", ")} (available: ${available.join(", ")}, or the groups ${Object.keys(QUEUE_GROUPS).join(", ")})`,
    );
  }
  if (kinds.length === 0) throw new Error("WORKER_QUEUES is empty");
  return kinds;
}

/**
 * The worker's object storage: every handler's calls ride out an outage (S3 restarting, a network
 * drop) with backoff, STORAGE_RETRY_ATTEMPTS tries from STORAGE_RETRY_DELAY_MS, each wait logged.
 */
export function createWorkerStorage(config: Config, logger: Logger): ObjectStorage {
  return new RetryingStorage(createStorage(config), {
    attempts: config.STORAGE_RETRY_ATTEMPTS,
    delayMs: config.STORAGE_RETRY_DELAY_MS,
    onRetry: ({ operation, key, attempt, delayMs, error }) =>
      logger.warn({ operation, key, attempt, delayMs, err: error.message }, "object storage unavailable; trying again"),
  });
}

/**
 * Everything a worker process runs: one BullMQ Worker per configured kind, the threads that do
 * the audio work, the job runner and the reconciler. The caller owns the process (signals, health endpoint).
 */
export async function startWorkerApp(
  config: Config,
  logger: Logger,
  metrics?: WorkerMetrics,
  options: {
    rowCheckIntervalMs?: number;
    /** Start the model threads only when a job needs them (a worker restarted after idling). */
    cold?: boolean;
    /**
     * Told once every model thread pool this worker had loaded has unloaded for idleness
     * (WORKER_MODEL_IDLE_SECONDS): main.ts restarts the process cold, which gives the memory
     * back whatever the allocator (jemalloc, as the models run on it, keeps freed pages).
     */
    onModelsIdle?: () => void;
  } = {},
): Promise<WorkerApp> {
  const { cold = false, onModelsIdle, ...runnerOptions } = options;
  checkWorkerKinds(WORKER_KINDS);
  const queues = selectQueues(config.WORKER_QUEUES);
  const prisma: PrismaClient = createPrismaClient(config.DATABASE_URL);
  const storage = createWorkerStorage(config, logger);
  const tmpDir = resolve(config.TMP_DIR || tmpdir());
  const modelsDir = resolve(config.MODELS_DIR);

  const pools: ThreadPool[] = [];
  const pooled = <P extends ThreadPool>(pool: P): P => {
    pools.push(pool);
    return pool;
  };
  let conversionPool: VoiceConversionPool | undefined;
  let analysisPool: AudioAnalysisPool | undefined;
  // Idle threads go with their models after WORKER_MODEL_IDLE_SECONDS; the next job loads them again.
  const idle = (name: string, onLoad?: () => void): PoolOptions => ({
    idleMs: config.WORKER_MODEL_IDLE_SECONDS * 1000,
    startUnloaded: cold,
    onUnload: () => {
      logger.info({ pool: name, idleSeconds: config.WORKER_MODEL_IDLE_SECONDS }, "idle: threads and their models unloaded");
      metrics?.modelsLoaded(name, false);
      if (pools.every((pool) => !pool.loaded)) onModelsIdle?.();
    },
    onLoad: () => {
      logger.info({ pool: name }, "a job arrived: loading the threads' models again");
      metrics?.modelsLoaded(name, true);
      onLoad?.();
    },
  });
  // Blends and builds queue their model's media; the reconciler uses the same queues.
  const jobQueues = new JobQueues({
    connection: config.REDIS_URL,
    prefix: config.QUEUE_PREFIX,
    attempts: config.JOB_ATTEMPTS,
    backoffDelayMsByKind: { "webhook-delivery": config.WEBHOOK_RETRY_DELAY_MS },
  });
  // A job's end writes its webhook in the same transaction; queued here right after the commit.
  // Every start, progress and end is appended to the job events the API's event streams read.
  const jobEvents = new JobEventLog(jobQueues.connection, config.QUEUE_PREFIX, config.JOB_EVENTS_RETAINED);
  const tableOptions = {
    ...queueOwedWebhooks(prisma, (ref) => jobQueues.enqueue(ref)),
    onChange: (change: JobChange) =>
      jobEvents
        .publish(change)
        .catch((err: Error) =>
          logger.warn({ err: err.message, ...change }, "could not append a job event; event streams resync"),
        ),
  };
  const jobTables = createJobTables(prisma, tableOptions);
  const context: WorkerKindContext = {
    config,
    logger,
    metrics,
    prisma,
    storage,
    queues: jobQueues,
    tables: jobTables,
    modelsDir,
    modelFiles: new VoiceModelFiles({ storage, modelsDir, cacheDir: join(tmpDir, "voice-models") }),
    // What a webhook's voice model record says is missing: the same check as the API's, on this machine's files.
    voiceAssets: new VoiceAssets({
      modelsDir,
      contentVec: config.VOICE_CONTENTVEC_MODEL,
      contentVecV1: config.VOICE_CONTENTVEC_V1_MODEL,
      rmvpe: config.VOICE_RMVPE_MODEL,
      pitchMethod: config.VOICE_PITCH_METHOD,
    }),
    output: { losslessFormat: config.LOSSLESS_FORMAT, lossyBitrateKbps: config.LOSSY_BITRATE_KBPS },
    pooled,
    idle,
    voiceConversionPool: () => (conversionPool ??= pooled(voiceConversionPoolFor(config, modelsDir, idle("voice conversion")))),
    audioAnalysisPool: () =>
      (analysisPool ??= pooled(
        createAudioAnalysisPool(config.WORKER_CONCURRENCY_AUDIO_ANALYSIS, {
          ...idle("audio analysis"),
          // a separation worker that serves no analyses starts the threads only when a job asks (analyze=true)
          startUnloaded: cold || !queues.includes("audio-analysis"),
        }),
      )),
  };
  // Each kind this worker serves, started side by side (a separation worker loads its models
  // meanwhile); a kind that cannot start stops the worker, with whatever the others started closed.
  let handlers: Map<JobKind, JobHandler<JobKind>>;
  try {
    const started = await Promise.all(
      queues.map(async (kind) => [kind, (await WORKER_KINDS[kind].start(context)) as JobHandler<JobKind>] as const),
    );
    handlers = new Map(started);
    await Promise.all(pools.map((p) => p.ready()));
  } catch (error) {
    await Promise.allSettled(pools.map((p) => p.close()));
    await Promise.allSettled([jobQueues.close(), storage.close(), prisma.$disconnect()]);
    throw error;
  }
  await catalogueRows(modelsDir)
    .then((rows) => registerVoiceCatalogue(prisma, rows))
    .catch((err: Error) => logger.warn({ err: err.message }, "could not register the default voices"));
  await queueOwedMedia(prisma, jobQueues).catch((err: Error) =>
    logger.warn({ err: err.message }, "could not queue the media of voice models lacking it; the reconciler will"),
  );

  const runner = new JobRunner(jobTables, {
    tmpDir,
    logger,
    rowWrites: { attempts: config.JOB_END_WRITE_ATTEMPTS, delayMs: config.JOB_END_WRITE_DELAY_MS },
    minFreeDiskBytes: config.WORKER_MIN_FREE_DISK_MB * 1e6,
    diskWaitMs: config.WORKER_DISK_WAIT_SECONDS * 1000,
    ...runnerOptions,
  });
  // What killed workers left in TMP_DIR/jobs goes before this worker takes a job, and every minute.
  const folders = new JobFolderKeeper({
    tmpDir,
    running: () => runner.runningFolders(),
    log: logger,
    onSwept: (result) => metrics?.jobFoldersSwept(result.removed.length, result.bytes),
  });
  await folders.start();
  metrics?.watchFreeDisk(tmpDir);
  // Cancels from the API (see @mixdown/queue's job-cancels.ts): a row this process is not running is ignored.
  const cancels = await subscribeToCancels(
    config.REDIS_URL,
    config.QUEUE_PREFIX,
    ({ kind, rowId }) => {
      if (runner.cancel(kind, rowId, "cancelled by the client"))
        logger.info({ kind, rowId }, "cancel received; stopping the job");
    },
    (err) => logger.warn({ err: err.message }, "redis connection error (cancel messages)"),
  );
  const connection = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
  connection.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
  let active = 0;
  const workers = queues.map((kind) => {
    const handler = handlers.get(kind)!;
    const worker = new Worker(
      kind,
      async (job: Job) => {
        active++;
        try {
          return await runner.run(kind, job, handler);
        } finally {
          active--;
        }
      },
      {
        connection,
        prefix: config.QUEUE_PREFIX,
        concurrency: concurrencyOf(kind, config),
        lockDuration: config.WORKER_LOCK_DURATION_MS,
        stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
        maxStalledCount: config.WORKER_MAX_STALLED_COUNT,
      },
    );
    worker.on("failed", (job, err) =>
      logger.warn({ queue: kind, bullJobId: job?.id, attempt: job?.attemptsMade, err: err.message }, "job attempt failed"),
    );
    worker.on("error", (err) => logger.warn({ queue: kind, err: err.message }, "worker error"));
    metrics?.watch(kind, worker, concurrencyOf(kind, config));
    return worker;
  });

  // The retention sweep (RETENTION_*), scheduled on the maintenance queue: one worker at a time.
  const sweeper = new RetentionSweeper({
    retention: new JobRetention(prisma),
    // the rows past RETENTION_JOB_MINUTES go as a DELETE takes them (they have ended: nothing to cancel)
    deletions: new ResourceDeletions(prisma, {
      storage,
      async cancelJob(kind, rowId) {
        if (await jobTables[kind].cancel(rowId)) await jobQueues.announceCancel({ kind, rowId }).catch(() => undefined);
      },
      removeQueueEntry: (kind, rowId) => jobQueues.removeEntry(kind, rowId),
    }),
    storage,
    settings: {
      inputMinutes: config.RETENTION_INPUT_MINUTES,
      outputMinutes: config.RETENTION_OUTPUT_MINUTES,
      jobMinutes: config.RETENTION_JOB_MINUTES,
      batch: config.RETENTION_SWEEP_BATCH,
    },
    log: logger,
    metrics,
  });
  const maintenance = await startMaintenance({
    connection,
    prefix: config.QUEUE_PREFIX,
    everyMs: { "retention-sweep": config.RETENTION_SWEEP_INTERVAL_SECONDS * 1000 },
    run: (task, signal) => sweeper.sweep(signal),
    lockDurationMs: config.WORKER_LOCK_DURATION_MS,
    stalledIntervalMs: config.WORKER_STALLED_INTERVAL_MS,
    onError: (err) => logger.warn({ queue: MAINTENANCE_QUEUE, err: err.message }, "maintenance queue error"),
  });

  // Rows whose queue entry never made it (a crash between insert and enqueue) are re-queued here
  // too, so a deployment that runs only workers still loses nothing.
  const reconciler =
    config.RECONCILE_INTERVAL_SECONDS > 0
      ? startReconciler(
          {
            queues: jobQueues,
            source: new RunningJobRepository(prisma, tableOptions),
            graceSeconds: config.RECONCILE_GRACE_SECONDS,
            log: logger,
          },
          config.RECONCILE_INTERVAL_SECONDS * 1000,
        )
      : undefined;

  const allocator = runsOnJemalloc() ? "jemalloc" : "system";
  logger.info({ queues, concurrency: queues.map((q) => concurrencyOf(q, config)), modelsDir, allocator }, "worker started");
  if (config.MODEL_ALLOCATOR === "jemalloc" && allocator !== "jemalloc")
    logger.warn(
      "MODEL_ALLOCATOR=jemalloc, but this worker runs on the system's malloc (libjemalloc2 is not installed, or the worker was not started by ./mixdown.sh up or the image's entrypoint): each model keeps an arena of its own",
    );
  return {
    queues,
    runner,
    activeJobs: () => active,
    async close() {
      folders.stop();
      await reconciler?.stop();
      await Promise.all([...workers.map((w) => w.close()), maintenance.close()]);
      await cancels.close();
      await Promise.all(pools.map((p) => p.close()));
      await jobQueues.close();
      connection.disconnect();
      await storage.close();
      await prisma.$disconnect();
    },
  };
}

/**
 * Queues the media of every ready voice model lacking it: the default catalogue registered just
 * now, and whatever an earlier run left owed. Entries that exist already are not added twice.
 */
async function queueOwedMedia(prisma: PrismaClient, queues: JobQueues): Promise<void> {
  for (const voiceModelId of await listModelsOwedMedia(prisma))
    await queues.enqueue({ queue: "voice-model-media", payload: { voiceModelId } });
}
