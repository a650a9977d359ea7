import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import { publicBaseUrl, type Config } from "@mixdown/config";
import {
  createJobTables,
  createPrismaClient,
  listModelsOwedMedia,
  queueOwedWebhooks,
  recordWebhookAttempt,
  registerVoiceCatalogue,
  RunningJobRepository,
  type PrismaClient,
} from "@mixdown/db";
import { concurrencyOf, JOB_KINDS, type JobKind } from "@mixdown/jobs";
import { startReconciler, JobQueues, subscribeToCancels } from "@mixdown/queue";
import { API_PREFIX, RecordPresenter } from "@mixdown/records";
import { createStorage, RetryingStorage, type ObjectStorage } from "@mixdown/storage";
import { VoiceAssets } from "@mixdown/voice/assets";
import { catalogueRows } from "@mixdown/voice/catalogue";
import { WebhookAddressPolicy } from "@mixdown/webhooks";
import { separationHandler } from "./jobs/separation.ts";
import { voiceBlendHandler } from "./jobs/voice-blend.ts";
import { ttsHandler } from "./jobs/tts.ts";
import { voiceConversionHandler } from "./jobs/voice-conversion.ts";
import { voiceModelBuildHandler } from "./jobs/voice-model-build.ts";
import { ensurePyTorch } from "@mixdown/python";
import { voiceModelMediaHandler } from "./jobs/voice-model-media.ts";
import { webhookDeliveryHandler } from "./jobs/webhook-delivery.ts";
import { JobRunner, type JobHandler, type JobHandlerFactories } from "./run-job.ts";
import { parseModelList, readSeparationModels, resolveModelList, resolveVocalSplit } from "@mixdown/separation/catalog";
import { runsOnJemalloc } from "@mixdown/separation/allocator";
import { createSeparationPool, type SeparationModelProvider, type SeparationPool } from "./separation-protocol.ts";
import type { TaskThreadPool } from "./task-threads.ts";
import { createVoiceBuildPool } from "./voice-build-protocol.ts";
import { createVoiceConversionPool, type VoiceConversionPool } from "./voice-conversion-protocol.ts";
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

/** The fixed phrase every voice model's demo is converted from (see assets/README.md). */
export const DEMO_PHRASE_PATH = fileURLToPath(new URL("../assets/demo-phrase.wav", import.meta.url));

/**
 * Queues listed in WORKER_QUEUES, each checked against the job kinds this worker has a handler
 * for (every kind of the catalogue, unless `available` says fewer): a worker configured for a
 * kind it cannot run refuses to start rather than leave those jobs waiting forever.
 */
export function selectQueues(list: string, available: readonly string[] = JOB_KINDS): JobKind[] {
  const wanted = list
    .split(",")
    .map((q) => q.trim())
    .filter(Boolean);
  const unknown = wanted.filter((q) => !available.includes(q));
  if (unknown.length > 0) {
    throw new Error(
      `WORKER_QUEUES names queues this worker has no handler for: ${unknown.join(", ")} (available: ${available.join(", ")})`,
    );
  }
  if (wanted.length === 0) throw new Error("WORKER_QUEUES is empty");
  return wanted as JobKind[];
}

/**
 * Everything a worker process runs: one BullMQ Worker per configured kind, the threads that do
 * the audio work, the job runner and the reconciler. The caller owns the process (signals, health endpoint).
 */
/**
 * Refuses to start a separation worker whose settings name a model that is not installed, or one
 * that cannot serve its kind: otherwise every job that names no model would fail, one by one.
 * The vocal split is optional: returns the split model to preload, or why vocal separations will
 * publish vocals and backing only (the worker logs it).
 */
export async function checkSeparationSettings(
  config: Pick<Config, "SEPARATION_MODEL_VOCALS" | "SEPARATION_MODEL_STEMS" | "SEPARATION_MODEL_VOCAL_SPLIT">,
  modelsDir: string,
): Promise<{ vocalSplit?: string; vocalSplitOff?: string }> {
  const { models, invalid } = await readSeparationModels(modelsDir);
  const installed = models.length ? models.map((m) => m.name).join(", ") : "none";
  const broken = invalid.length ? `; invalid manifests: ${invalid.map((i) => i.error).join("; ")}` : "";
  const settings = [
    ["SEPARATION_MODEL_VOCALS", config.SEPARATION_MODEL_VOCALS, "vocal-separation"],
    ["SEPARATION_MODEL_STEMS", config.SEPARATION_MODEL_STEMS, "stem-split"],
  ] as const;
  for (const [setting, value, kind] of settings) {
    // one model, or an ensemble's (the config schema refused empty and repeated names)
    const resolved = resolveModelList(models, parseModelList(value), kind);
    if (resolved.problem === "not-installed")
      throw new Error(
        `${setting}="${value}": no separation model "${resolved.name}" in ${modelsDir} (installed: ${installed}${broken})`,
      );
    if (resolved.problem === "cannot-serve")
      throw new Error(
        `${setting}="${value}": the model "${resolved.name}" (stems: ${resolved.model.stems.join(", ")}) cannot serve a ${kind} (models that can: ${resolved.fit.join(", ") || "none"})`,
      );
    if (resolved.problem === "no-common-stem")
      throw new Error(`${setting}="${value}": the models have no stem in common, so their ${kind} cannot be combined`);
  }
  const split = resolveVocalSplit(config.SEPARATION_MODEL_VOCAL_SPLIT, models);
  return split.model ? { vocalSplit: split.model.name } : { vocalSplitOff: split.reason };
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

export async function startWorkerApp(
  config: Config,
  logger: Logger,
  metrics?: WorkerMetrics,
  options: { rowCheckIntervalMs?: number } = {},
): Promise<WorkerApp> {
  const queues = selectQueues(config.WORKER_QUEUES);
  const prisma: PrismaClient = createPrismaClient(config.DATABASE_URL);
  const storage = createWorkerStorage(config, logger);
  const tmpDir = resolve(config.TMP_DIR || tmpdir());
  const modelsDir = resolve(config.MODELS_DIR);
  // What a webhook's voice model record says is missing: the same check as the API's, on this machine's files.
  const voiceAssets = new VoiceAssets({
    modelsDir,
    contentVec: config.VOICE_CONTENTVEC_MODEL,
    contentVecV1: config.VOICE_CONTENTVEC_V1_MODEL,
    rmvpe: config.VOICE_RMVPE_MODEL,
    pitchMethod: config.VOICE_PITCH_METHOD,
  });

  const pools: Array<Pick<TaskThreadPool<unknown, unknown>, "ready" | "close">> = [];
  const pooled = <P extends Pick<TaskThreadPool<unknown, unknown>, "ready" | "close">>(pool: P): P => {
    pools.push(pool);
    return pool;
  };
  // Conversions, TTS jobs and demo renders share one set of conversion threads (and their loaded models).
  let conversionPool: VoiceConversionPool | undefined;
  const voiceConversionPool = () =>
    (conversionPool ??= pooled(
      createVoiceConversionPool(config.WORKER_CONCURRENCY_VOICE_CONVERSION, {
        contentVecPath: resolve(modelsDir, config.VOICE_CONTENTVEC_MODEL),
        contentVecV1Path: resolve(modelsDir, config.VOICE_CONTENTVEC_V1_MODEL),
        rmvpePath: resolve(modelsDir, config.VOICE_RMVPE_MODEL),
        pitchMethod: config.VOICE_PITCH_METHOD,
        intraOpThreads: config.ORT_INTRA_OP_THREADS,
        interOpThreads: config.ORT_INTER_OP_THREADS,
        cachedModels: config.VOICE_MODEL_CACHE_SIZE,
      }),
    ));
  // Blends and builds queue their model's media; the reconciler uses the same queues.
  const jobQueues = new JobQueues({
    connection: config.REDIS_URL,
    prefix: config.QUEUE_PREFIX,
    attempts: config.JOB_ATTEMPTS,
    backoffDelayMsByKind: { "webhook-delivery": config.WEBHOOK_RETRY_DELAY_MS },
  });
  // A job's end writes its webhook in the same transaction; queued here right after the commit.
  const tableOptions = queueOwedWebhooks(prisma, (ref) => jobQueues.enqueue(ref));
  const modelFiles = new VoiceModelFiles({ storage, modelsDir, cacheDir: join(tmpDir, "voice-models") });
  const output = { losslessFormat: config.LOSSLESS_FORMAT, lossyBitrateKbps: config.LOSSY_BITRATE_KBPS };
  let separationPool: SeparationPool | undefined;
  let vocalSplit: string | undefined;
  if (queues.includes("separation")) {
    const checked = await checkSeparationSettings(config, modelsDir);
    vocalSplit = checked.vocalSplit;
    if (checked.vocalSplitOff)
      logger.warn({ reason: checked.vocalSplitOff }, "vocal separations publish vocals and backing only (no vocal split)");
  }
  const handlerFactories: JobHandlerFactories = {
    separation: () =>
      separationHandler({
        storage,
        maxInputSeconds: config.MAX_SEPARATION_SECONDS,
        pool: (separationPool = pooled(
          createSeparationPool(config.WORKER_CONCURRENCY_SEPARATION, {
            modelsDir,
            executionProvider: config.ORT_EXECUTION_PROVIDER,
            providerFallback: config.ORT_PROVIDER_FALLBACK,
            intraOpThreads: config.ORT_INTRA_OP_THREADS,
            interOpThreads: config.ORT_INTER_OP_THREADS,
            preload: [
              ...new Set([
                ...parseModelList(config.SEPARATION_MODEL_VOCALS),
                ...parseModelList(config.SEPARATION_MODEL_STEMS),
                ...(vocalSplit ? [vocalSplit] : []),
              ]),
            ],
            // it runs beside the vocals model, in the same pass: neither waits for the other's runs
            ownThread: vocalSplit ? [vocalSplit] : [],
          }),
        )),
        ...output,
        models: {
          vocalSeparation: config.SEPARATION_MODEL_VOCALS,
          stemSplit: config.SEPARATION_MODEL_STEMS,
          vocalSplit: config.SEPARATION_MODEL_VOCAL_SPLIT,
        },
        ensembles: { vocalSeparation: config.SEPARATION_ENSEMBLE_VOCALS, stemSplit: config.SEPARATION_ENSEMBLE_STEMS },
        modelsDir,
      }),
    "voice-conversion": () =>
      voiceConversionHandler({
        storage,
        maxInputSeconds: config.MAX_CONVERSION_SECONDS,
        pool: voiceConversionPool(),
        modelFiles,
        ...output,
      }),
    "voice-blend": () => voiceBlendHandler({ storage, modelFiles, queues: jobQueues }),
    tts: () =>
      ttsHandler({
        storage,
        synthesizer: config.TTS_SYNTHESIZER,
        piperDir: resolve(modelsDir, config.TTS_PIPER_DIR),
        pool: voiceConversionPool(),
        modelFiles,
        ...output,
      }),
    "voice-model-media": () =>
      voiceModelMediaHandler({
        storage,
        pool: voiceConversionPool(),
        modelFiles,
        lossyBitrateKbps: config.LOSSY_BITRATE_KBPS,
        demoPhrasePath: DEMO_PHRASE_PATH,
      }),
    "voice-model-build": () =>
      voiceModelBuildHandler({
        storage,
        pool: pooled(createVoiceBuildPool(1)),
        queues: jobQueues,
        python: () => ensurePyTorch((line) => logger.info(line)),
        links: {
          policy: new WebhookAddressPolicy(config.WEBHOOK_DENIED_NETWORKS),
          maxModelBytes: config.MAX_VOICE_MODEL_UPLOAD_BYTES,
          maxIndexBytes: config.MAX_VOICE_MODEL_INDEX_BYTES,
        },
      }),
    "webhook-delivery": () =>
      webhookDeliveryHandler({
        // Records as the API presents them, links included: API_PREFIX is the interface's fixed path.
        presenter: new RecordPresenter(storage, config.SIGNED_URL_TTL_SECONDS, `${publicBaseUrl(config)}${API_PREFIX}`, (row) =>
          voiceAssets.missingFor(row),
        ),
        policy: new WebhookAddressPolicy(config.WEBHOOK_DENIED_NETWORKS),
        timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        recordAttempt: (id, outcome) => recordWebhookAttempt(prisma, id, outcome),
      }),
  };
  const handlers = new Map(queues.map((kind) => [kind, handlerFactories[kind]() as JobHandler<JobKind>]));
  await Promise.all(pools.map((p) => p.ready()));
  if (separationPool) reportProviders((await separationPool.ready()) as SeparationModelProvider[][], logger, metrics);
  await catalogueRows(modelsDir)
    .then((rows) => registerVoiceCatalogue(prisma, rows))
    .catch((err: Error) => logger.warn({ err: err.message }, "could not register the default voices"));
  await queueOwedMedia(prisma, jobQueues).catch((err: Error) =>
    logger.warn({ err: err.message }, "could not queue the media of voice models lacking it; the reconciler will"),
  );

  const runner = new JobRunner(createJobTables(prisma, tableOptions), {
    tmpDir,
    logger,
    rowWrites: { attempts: config.JOB_END_WRITE_ATTEMPTS, delayMs: config.JOB_END_WRITE_DELAY_MS },
    ...options,
  });
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
      await reconciler?.stop();
      await Promise.all(workers.map((w) => w.close()));
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

/**
 * Says where the separation models run, once per model (every thread of the pool loads them
 * alike): info when on the configured provider, a warning with the reason after a fallback.
 */
function reportProviders(threads: SeparationModelProvider[][], logger: Logger, metrics: WorkerMetrics | undefined): void {
  const seen = new Set<string>();
  for (const p of threads.flat()) {
    if (seen.has(p.model)) continue;
    seen.add(p.model);
    metrics?.executionProvider(p.model, p.requested, p.running);
    if (p.fallbackReason) {
      logger.warn(
        { model: p.model, requested: p.requested, provider: p.running, reason: p.fallbackReason },
        `separation model runs on ${p.running}: ${p.requested} is unavailable (ORT_PROVIDER_FALLBACK=cpu)`,
      );
    } else {
      logger.info({ model: p.model, provider: p.running }, `separation model runs on ${p.running}`);
    }
  }
}
