import { tmpdir } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { UnrecoverableError, Worker, type Job, type Processor } from "bullmq";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Config } from "@mixdown/config";
import {
  createPrismaClient,
  RunningJobRepository,
  SeparationJobRunRepository,
  VoiceBlendJobRunRepository,
  VoiceConversionJobRunRepository,
  VoiceModelMediaRepository,
  type PrismaClient,
  type RunningJobRef,
} from "@mixdown/db";
import { QueueName, startReconciler, JobQueues, type QueueName as QueueNameType } from "@mixdown/queue";
import { createStorage, type ObjectStorage } from "@mixdown/storage";
import { processSeparationJob } from "./jobs/separation.ts";
import { processVoiceBlendJob } from "./jobs/voice-blend.ts";
import { createSeparationPool } from "./separation-protocol.ts";
import { processVoiceConversionJob } from "./jobs/voice-conversion.ts";
import { processVoiceModelMediaJob } from "./jobs/voice-model-media.ts";
import { createVoiceConversionPool, type VoiceConversionPool } from "./voice-conversion-protocol.ts";
import type { TaskThreadPool } from "./task-threads.ts";
import { registerDefaultVoices } from "./voice-catalogue.ts";
import type { WorkerMetrics } from "./worker-metrics.ts";

export interface WorkerApp {
  /** Queues this process serves. */
  readonly queues: QueueNameType[];
  /** Jobs being processed right now. */
  activeJobs(): number;
  /** Stops taking jobs, lets the running ones finish, then releases everything. */
  close(): Promise<void>;
}

type Handler = Processor;

/** The fixed phrase every voice model's demo is converted from (see assets/README.md). */
export const DEMO_PHRASE_PATH = fileURLToPath(new URL("../assets/demo-phrase.wav", import.meta.url));

/** Queues listed in WORKER_QUEUES, each checked against the handlers this worker has. */
export function selectQueues(list: string, available: readonly string[]): QueueNameType[] {
  const wanted = list
    .split(",")
    .map((q) => q.trim())
    .filter(Boolean);
  const unknown = wanted.filter((q) => !available.includes(q));
  if (unknown.length > 0) {
    throw new Error(`WORKER_QUEUES names queues this worker has no handler for: ${unknown.join(", ")} (available: ${available.join(", ")})`);
  }
  if (wanted.length === 0) throw new Error("WORKER_QUEUES is empty");
  return wanted as QueueNameType[];
}

/**
 * Everything a worker process runs: one BullMQ Worker per configured queue, the threads that do
 * the audio work, and the reconciler. The caller owns the process (signals, health endpoint).
 */
export async function startWorkerApp(config: Config, logger: Logger, metrics?: WorkerMetrics): Promise<WorkerApp> {
  const prisma: PrismaClient = createPrismaClient(config.DATABASE_URL);
  const storage: ObjectStorage = createStorage(config);
  const tmpDir = resolve(config.TMP_DIR || tmpdir());
  const modelsDir = resolve(config.MODELS_DIR);

  const pools: Array<Pick<TaskThreadPool<unknown, unknown>, "ready" | "close">> = [];
  // Conversions and demo renders share one set of conversion threads (and their loaded models).
  let conversionPool: VoiceConversionPool | undefined;
  const voiceConversionPool = () => {
    if (!conversionPool) {
      conversionPool = createVoiceConversionPool(config.WORKER_CONCURRENCY_VOICE_CONVERSION, {
        contentVecPath: resolve(modelsDir, config.VOICE_CONTENTVEC_MODEL),
        intraOpThreads: config.ORT_INTRA_OP_THREADS,
        interOpThreads: config.ORT_INTER_OP_THREADS,
        cachedModels: config.VOICE_MODEL_CACHE_SIZE,
      });
      pools.push(conversionPool);
    }
    return conversionPool;
  };
  // Blends queue their output model's media; the reconciler uses the same queues.
  const jobQueues = new JobQueues({ connection: config.REDIS_URL, prefix: config.QUEUE_PREFIX, attempts: config.JOB_ATTEMPTS });
  const handlers: Partial<Record<QueueNameType, Handler>> = {};
  const handlerFactories: Record<string, () => Handler> = {
    [QueueName.separation]: () => {
      const pool = createSeparationPool(config.WORKER_CONCURRENCY_SEPARATION, {
        modelsDir,
        executionProvider: config.ORT_EXECUTION_PROVIDER,
        intraOpThreads: config.ORT_INTRA_OP_THREADS,
        interOpThreads: config.ORT_INTER_OP_THREADS,
        preload: [config.SEPARATION_MODEL_VOCALS, config.SEPARATION_MODEL_STEMS],
      });
      pools.push(pool);
      const deps = {
        runs: new SeparationJobRunRepository(prisma),
        storage,
        pool,
        tmpDir,
        losslessFormat: config.LOSSLESS_FORMAT,
        lossyBitrateKbps: config.LOSSY_BITRATE_KBPS,
        models: { vocalSeparation: config.SEPARATION_MODEL_VOCALS, stemSplit: config.SEPARATION_MODEL_STEMS },
        logger,
      };
      return (job: Job) => processSeparationJob(job, deps);
    },
    [QueueName.voiceConversion]: () => {
      const deps = {
        runs: new VoiceConversionJobRunRepository(prisma),
        storage,
        pool: voiceConversionPool(),
        tmpDir,
        modelsDir,
        losslessFormat: config.LOSSLESS_FORMAT,
        lossyBitrateKbps: config.LOSSY_BITRATE_KBPS,
        logger,
      };
      return (job: Job) => processVoiceConversionJob(job, deps);
    },
    [QueueName.voiceBlend]: () => {
      const deps = { runs: new VoiceBlendJobRunRepository(prisma), storage, modelsDir, tmpDir, queues: jobQueues, logger };
      return (job: Job) => processVoiceBlendJob(job, deps);
    },
    [QueueName.voiceModelMedia]: () => {
      const deps = {
        media: new VoiceModelMediaRepository(prisma),
        storage,
        pool: voiceConversionPool(),
        tmpDir,
        modelsDir,
        lossyBitrateKbps: config.LOSSY_BITRATE_KBPS,
        demoPhrasePath: DEMO_PHRASE_PATH,
        logger,
      };
      return (job: Job) => processVoiceModelMediaJob(job, deps);
    },
  };
  const queues = selectQueues(config.WORKER_QUEUES, Object.keys(handlerFactories));
  for (const q of queues) handlers[q] = handlerFactories[q]!();
  await Promise.all(pools.map((p) => p.ready()));
  await registerDefaultVoices(prisma, modelsDir).catch((err: Error) => logger.warn({ err: err.message }, "could not register the default voices"));
  await queueOwedMedia(new VoiceModelMediaRepository(prisma), jobQueues).catch((err: Error) =>
    logger.warn({ err: err.message }, "could not queue the media of voice models lacking it; the reconciler will"),
  );

  const running = new RunningJobRepository(prisma);
  const concurrency: Record<QueueNameType, number> = {
    separation: config.WORKER_CONCURRENCY_SEPARATION,
    "voice-conversion": config.WORKER_CONCURRENCY_VOICE_CONVERSION,
    "voice-blend": config.WORKER_CONCURRENCY_VOICE_BLEND,
    // A demo takes a second or two of a conversion thread; one at a time leaves the others to jobs callers wait on.
    "voice-model-media": 1,
  };
  const connection = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
  connection.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
  let active = 0;
  const workers = queues.map((queue) => {
    const handler = handlers[queue]!;
    const worker = new Worker(
      queue,
      async (job) => {
        active++;
        try {
          return await handler(job);
        } catch (err) {
          await endRowIfFinal(job, err as Error);
          throw err;
        } finally {
          active--;
        }
      },
      {
        connection,
        prefix: config.QUEUE_PREFIX,
        concurrency: concurrency[queue],
        lockDuration: config.WORKER_LOCK_DURATION_MS,
        stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
        maxStalledCount: config.WORKER_MAX_STALLED_COUNT,
      },
    );
    worker.on("failed", (job, err) =>
      logger.warn({ queue, jobId: job?.data?.jobId, bullJobId: job?.id, attempt: job?.attemptsMade, err: err.message }, "job attempt failed"),
    );
    worker.on("error", (err) => logger.warn({ queue, err: err.message }, "worker error"));
    metrics?.watch(queue, worker, concurrency[queue]);
    return worker;
  });

  /**
   * A job whose input can never work, or whose last attempt just failed, ends its row as `error`
   * with the reason; earlier attempts leave the row `running` for the retry.
   */
  async function endRowIfFinal(job: Job, err: Error): Promise<void> {
    const attempts = job.opts.attempts ?? 1;
    const final = err instanceof UnrecoverableError || job.attemptsMade + 1 >= attempts;
    if (!final) return;
    const message = err instanceof UnrecoverableError ? err.message : `Processing failed after ${attempts} attempts: ${err.message}`;
    const ref = { queue: job.queueName, payload: job.data } as RunningJobRef;
    await running.markFailed(ref, message).catch((e: Error) => logger.error({ err: e.message, jobId: job.data?.jobId }, "could not mark the row as failed"));
  }

  // Rows whose queue entry never made it (a crash between insert and enqueue) are re-queued here
  // too, so a deployment that runs only workers still loses nothing.
  const reconciler =
    config.RECONCILE_INTERVAL_SECONDS > 0
      ? startReconciler(
          { queues: jobQueues, source: running, graceSeconds: config.RECONCILE_GRACE_SECONDS, log: logger },
          config.RECONCILE_INTERVAL_SECONDS * 1000,
        )
      : undefined;

  logger.info({ queues, concurrency: queues.map((q) => concurrency[q]), modelsDir }, "worker started");
  return {
    queues,
    activeJobs: () => active,
    async close() {
      await reconciler?.stop();
      await Promise.all(workers.map((w) => w.close()));
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
async function queueOwedMedia(media: VoiceModelMediaRepository, queues: JobQueues): Promise<void> {
  for (const voiceModelId of await media.listOwed()) await queues.enqueueVoiceModelMedia({ voiceModelId });
}
