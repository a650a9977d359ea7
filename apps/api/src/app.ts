import { mkdir } from "node:fs/promises";
import multipart from "@fastify/multipart";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { publicBaseUrl, type Config } from "@mixdown/config";
import {
  ApiKeyRepository,
  createJobTables,
  queueOwedWebhooks,
  createPrismaClient,
  DashboardSignInRepository,
  IdempotencyKeyRepository,
  ServiceCountRepository,
  UsageRepository,
  VoiceModelImportRepository,
  VoiceModelRepository,
  type JobChange,
  type PrismaClient,
} from "@mixdown/db";
import { createQueues, JobEventLog, type JobQueues } from "@mixdown/queue";
import { createStorage, LocalDiskStorage, type ObjectStorage } from "@mixdown/storage";
import { WebhookAddressPolicy } from "@mixdown/webhooks";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import { API_PREFIX, type AppContext } from "./app-context.ts";
import { registerCallerAuth } from "./auth/caller-auth.ts";
import { fileRoutes } from "./files/routes.ts";
import { JobEventHub } from "./events/job-event-hub.ts";
import { callerEventRoutes, streamOptions } from "./events/routes.ts";
import { registerSecurityHeaders, requestLogSerializers } from "./http/security-headers.ts";
import { healthRoutes } from "./health/routes.ts";
import { DEFAULT_WEB_DIR, dashboardRoutes } from "./dashboard/routes.ts";
import { installErrorHandling } from "./http/errors.ts";
import { ErrorResponse } from "./http/schemas.ts";
import { IDEMPOTENCY_WINDOW_MS, IdempotentCreates } from "./idempotency/idempotent-creates.ts";
import { CallerDeletions } from "./jobs/caller-deletions.ts";
import { JobCancels } from "./jobs/job-cancels.ts";
import { JobSubmitter } from "./jobs/job-submitter.ts";
import { ApiMetrics } from "./metrics/api-metrics.ts";
import { StoredBytes } from "./metrics/stored-bytes.ts";
import { documentedObject, documentedRoute, OPENAPI_SERVERS, OPENAPI_TAGS } from "./http/openapi-layout.ts";
import { installLingeringClose } from "./http/lingering-close.ts";
import { metricsRoutes } from "./metrics/routes.ts";
import { RateLimitRepository } from "./rate-limit/rate-limit-repository.ts";
import { registerRateLimit } from "./rate-limit/rate-limit.ts";
import { RecordPresenter } from "@mixdown/records";
import { sharedRecordSchemas } from "@mixdown/records";
import { JOB_TABLE_KINDS } from "@mixdown/jobs";
import type { ApiKindDeps } from "./kinds/context.ts";
import { API_KINDS } from "./kinds/index.ts";
import { separationApi } from "./kinds/separation/routes.ts";
import { batchRoutes } from "./batches/routes.ts";
import { SeparationModelRecord } from "./kinds/separation/installed-models.ts";
import { ModelInstallRecord } from "./model-catalogue/installs.ts";
import { CatalogueModelRecord, modelCatalogueRoutes } from "./model-catalogue/routes.ts";
import { sweepStaleUploads } from "./uploads/receive-form.ts";
import { UsageQuota } from "./usage/quota.ts";
import { UsageReport, usageRoutes } from "./usage/routes.ts";
import { voiceModelRoutes } from "./voice-models/routes.ts";
import { VoiceModelImportService } from "./voice-models/voice-model-import.ts";
import { voiceAssetsOf } from "./voice-models/voice-assets.ts";
import { VoiceModelService } from "./voice-models/voice-model-service.ts";

/** Connections and knobs a caller may supply; whatever is missing is created from `config` and closed with the app. */
export interface AppDeps {
  prisma?: PrismaClient;
  queues?: JobQueues;
  storage?: ObjectStorage;
  logger?: FastifyBaseLogger;
  /** How long a resolved API key is cached (a revoked key keeps working at most this long). */
  authCacheTtlMs?: number;
  /** How long a create waits for Redis to take the queue entry before leaving it to the reconciler. */
  enqueueTimeoutMs?: number;
  /** Where the API's own logger writes (default: stdout); tests read what it logs. */
  logStream?: { write(line: string): void };
  /** The built web dashboard served at `/` (default: apps/web/dist of this checkout). */
  webDir?: string;
}

export type App = FastifyInstance & { ctx: AppContext };

/**
 * What the service reads and drops of a body it has answered 413 before closing the connection
 * (so that the client, still sending, reads the answer): 64 MiB within 10 s.
 */
const LINGER_MAX_BYTES = 64 * 1024 * 1024;
const LINGER_MAX_MS = 10_000;

/** The Kits v1 HTTP API as a Fastify instance (not yet listening). */
export async function buildApp(config: Config, deps: AppDeps = {}): Promise<App> {
  const app = Fastify({
    ...(deps.logger
      ? { loggerInstance: deps.logger }
      : { logger: { level: config.LOG_LEVEL, serializers: requestLogSerializers, stream: deps.logStream } }),
    ajv: { customOptions: { coerceTypes: "array", removeAdditional: true, useDefaults: true, allErrors: false } },
    forceCloseConnections: true,
    // Slow and hostile clients (`.env.example`): answered 408 / 431 with a JSON body by Fastify's
    // client error handler, and the connection closed.
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_SECONDS * 1000,
    http: {
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_SECONDS * 1000,
      maxHeaderSize: config.HTTP_MAX_HEADER_BYTES,
      // Node checks the two timeouts this often (30 s by default, which would stretch a 10 s limit to 40).
      connectionsCheckingInterval: 1_000,
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const owned: Array<() => Promise<unknown>> = [];
  const prisma = deps.prisma ?? createPrismaClient(config.DATABASE_URL);
  if (!deps.prisma) owned.push(() => prisma.$disconnect());
  const queues =
    deps.queues ??
    createQueues({
      connection: config.REDIS_URL,
      prefix: config.QUEUE_PREFIX,
      attempts: config.JOB_ATTEMPTS,
      backoffDelayMsByKind: { "webhook-delivery": config.WEBHOOK_RETRY_DELAY_MS },
      onError: (error) => app.log.warn({ err: error }, "redis connection error"),
    });
  if (!deps.queues) owned.push(() => queues.close());
  const storage = deps.storage ?? createStorage(config);
  if (!deps.storage) owned.push(() => storage.close());
  app.addHook("onClose", async () => {
    for (const close of owned.reverse()) await close().catch((error: unknown) => app.log.warn({ err: error }, "close failed"));
  });

  await mkdir(config.TMP_DIR, { recursive: true });
  await sweepStaleUploads(config.TMP_DIR);

  // What RVC models still need on this server: named in voice model records, a 422 at a conversion's create.
  const voiceAssets = voiceAssetsOf(config);
  const presenter = new RecordPresenter(storage, {
    ttlSeconds: config.SIGNED_URL_TTL_SECONDS,
    apiBaseUrl: `${publicBaseUrl(config)}${API_PREFIX}`,
    missingAssets: (row) => voiceAssets.missingFor(row),
    outputRetentionMinutes: config.RETENTION_OUTPUT_MINUTES,
  });
  const submitter = new JobSubmitter(queues, app.log, deps.enqueueTimeoutMs);
  const jobEvents = new JobEventHub(new JobEventLog(queues.connection, config.QUEUE_PREFIX, config.JOB_EVENTS_RETAINED), {
    redisUrl: config.REDIS_URL,
    prefix: config.QUEUE_PREFIX,
    logger: app.log,
  });
  owned.push(() => jobEvents.close());
  // A cancel may owe a webhook (queued at once, like the worker's ends); its end is a job event.
  const jobTableOptions = {
    ...queueOwedWebhooks(prisma, (ref) => queues.enqueue(ref)),
    onChange: (change: JobChange) => jobEvents.publish(change),
  };
  const modelsRepo = new VoiceModelRepository(prisma);
  const idempotencyKeys = new IdempotencyKeyRepository(prisma);
  const cancels = new JobCancels(createJobTables(prisma, jobTableOptions), queues, app.log);
  const deletions = new CallerDeletions(prisma, storage, cancels, queues);
  const serviceDeps = { storage, submitter, cancels, presenter, log: app.log };
  const usage = new UsageRepository(prisma);
  const kindDeps: ApiKindDeps = {
    ...serviceDeps,
    deletions,
    config,
    prisma,
    voiceModels: modelsRepo,
    voiceAssets,
    quota: new UsageQuota(usage),
  };
  const webhookPolicy = new WebhookAddressPolicy(config.WEBHOOK_DENIED_NETWORKS);
  const ctx: AppContext = {
    config,
    prisma,
    queues,
    storage,
    apiKeys: new ApiKeyRepository(prisma),
    models: new VoiceModelService({ models: modelsRepo, presenter, deletions }),
    modelImports: new VoiceModelImportService({
      ...serviceDeps,
      imports: new VoiceModelImportRepository(prisma),
      policy: webhookPolicy,
      maxReferenceSeconds: config.MAX_CONVERSION_SECONDS,
    }),
    idempotency: new IdempotentCreates(idempotencyKeys, app.log),
    deletions: deletions.resources,
    webhookPolicy,
    jobEvents,
    jobTableOptions,
    metrics: config.METRICS_ENABLED
      ? new ApiMetrics({
          queues,
          counts: new ServiceCountRepository(prisma),
          log: app.log,
          stored: new StoredBytes(storage),
          disks: {
            TMP_DIR: config.TMP_DIR,
            ...(config.STORAGE_DRIVER === "local" ? { STORAGE_LOCAL_DIR: config.STORAGE_LOCAL_DIR } : {}),
          },
        })
      : undefined,
  };
  app.decorate("ctx", ctx);
  const { metrics } = ctx;
  if (metrics) {
    // The route pattern, not the URL: one series per route however many ids are requested.
    app.addHook("onResponse", async (request, reply) => {
      metrics.observeRequest(request.method, request.routeOptions.url ?? "unmatched", reply.statusCode, reply.elapsedTime / 1000);
    });
  }
  pruneIdempotencyKeys(app, idempotencyKeys);
  finishPendingDeletions(app, deletions, config.DELETION_RETRY_SECONDS);

  installErrorHandling(app);
  installLingeringClose(app, { maxBytes: LINGER_MAX_BYTES, maxMs: LINGER_MAX_MS });
  // The origin every signed URL points at, from one signed the same way as any other.
  await registerSecurityHeaders(app, new URL(await storage.signedUrl("origin-probe", 60)).origin);
  await app.register(multipart, { throwFileSizeLimit: true });
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Mixdown: Kits v1 API",
        version: "1.0.0",
        license: { name: "MIT", identifier: "MIT" },
        description:
          "Self-hosted audio jobs: vocal separation, stem splitting, voice conversion, text to speech and voice blending. Every `/api/kits/v1` route needs `Authorization: Bearer <API key>`. Errors are JSON `{ statusCode, error, message }`. Any route may answer 503 with `Retry-After` while the database or object storage is unavailable; a create answered 503 has stored nothing.",
      },
      servers: OPENAPI_SERVERS,
      tags: OPENAPI_TAGS,
      components: {
        securitySchemes: {
          bearerAuth: {
            type: "http",
            scheme: "bearer",
            description: "An API key from `mixdown keys create` (`./mixdown.sh keys create` in a checkout)",
          },
          metricsToken: { type: "http", scheme: "bearer", description: "METRICS_TOKEN (GET /metrics only)" },
        },
      },
    },
    transform: documentedRoute,
    transformObject: documentedObject,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
  app.addSchema(ErrorResponse);
  for (const schema of sharedRecordSchemas) app.addSchema(schema);
  app.addSchema(SeparationModelRecord);
  app.addSchema(ModelInstallRecord);
  app.addSchema(CatalogueModelRecord);
  app.addSchema(UsageReport);

  await app.register(healthRoutes, { ctx });
  await app.register(dashboardRoutes, {
    signInCodes: new DashboardSignInRepository(prisma),
    webDir: deps.webDir ?? DEFAULT_WEB_DIR,
  });
  if (metrics) await app.register(metricsRoutes, { metrics, token: config.METRICS_TOKEN });
  if (storage instanceof LocalDiskStorage) {
    await app.register(fileRoutes, { storage, secret: config.SIGNED_URL_SECRET! });
  }
  await app.register(
    async (api) => {
      await registerCallerAuth(api, { apiKeys: ctx.apiKeys, cacheTtlMs: deps.authCacheTtlMs ?? 5_000 });
      registerRateLimit(api, {
        repository: new RateLimitRepository(queues.connection, config.QUEUE_PREFIX),
        readsPerMinute: config.RATE_LIMIT_READS_PER_MINUTE,
        writesPerMinute: config.RATE_LIMIT_WRITES_PER_MINUTE,
      });
      // A batch creates separation jobs through the separation kind's own service.
      const separations = separationApi.service(kindDeps);
      for (const kind of JOB_TABLE_KINDS) {
        const { routes, service } = API_KINDS[kind];
        await api.register(routes, { ctx, service: kind === "separation" ? separations : service(kindDeps) });
      }
      await api.register(batchRoutes, { ctx, separations, deps: kindDeps });
      await api.register(modelCatalogueRoutes, { ctx, submitter });
      await api.register(voiceModelRoutes, { ctx });
      await api.register(usageRoutes, { usage });
      await api.register(callerEventRoutes, { hub: jobEvents, options: streamOptions(config) });
    },
    { prefix: API_PREFIX },
  );
  return app as unknown as App;
}

/**
 * Deletions cut short (storage down, a process killed between a deletion's steps) are finished
 * here: once at start, then every `intervalSeconds` (0: only at start), each one that has waited
 * that long. Several APIs may run it at once: every step of a deletion can be repeated.
 */
function finishPendingDeletions(app: FastifyInstance, deletions: CallerDeletions, intervalSeconds: number): void {
  const finish = () =>
    deletions.resources
      .finishPending(new Date(Date.now() - intervalSeconds * 1000))
      .then((count) => {
        if (count > 0) app.log.info({ count }, "finished deletions left pending");
      })
      .catch((error: unknown) => app.log.warn({ err: error }, "could not finish pending deletions"));
  const timer = intervalSeconds > 0 ? setInterval(finish, intervalSeconds * 1000).unref() : undefined;
  app.addHook("onReady", async () => {
    void finish();
  });
  app.addHook("onClose", async () => clearInterval(timer));
}

/**
 * Keys older than the 24-hour window are ignored by the claim already; this deletes them so the
 * table stays the size of a day's creates. Hourly, and once at start.
 */
function pruneIdempotencyKeys(app: FastifyInstance, keys: IdempotencyKeyRepository): void {
  const prune = () =>
    keys
      .pruneOlderThan(new Date(Date.now() - IDEMPOTENCY_WINDOW_MS))
      .catch((error: unknown) => app.log.warn({ err: error }, "could not prune expired idempotency keys"));
  const timer = setInterval(prune, 3600_000).unref();
  app.addHook("onReady", async () => {
    void prune();
  });
  app.addHook("onClose", async () => clearInterval(timer));
}
