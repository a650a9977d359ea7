import type { Config } from "@mixdown/config";
import type { MixdownJobTables, PrismaClient } from "@mixdown/db";
import type { JobKind } from "@mixdown/jobs";
import type { JobQueues } from "@mixdown/queue";
import type { ObjectStorage } from "@mixdown/storage";
import type { VoiceAssets } from "@mixdown/voice/assets";
import type { Logger } from "pino";
import type { JobHandler } from "../run-job.ts";
import type { PoolOptions, TaskThreadPool } from "../task-threads.ts";
import type { VoiceModelFiles } from "../voice-model-files.ts";
import type { WorkerMetrics } from "../worker-metrics.ts";
import type { VoiceConversionPool } from "./voice-conversion/protocol.ts";
import type { AudioAnalysisPool } from "./audio-analysis/protocol.ts";

export type ThreadPool = Pick<TaskThreadPool<unknown, unknown>, "ready" | "close" | "loaded">;

/** What a worker process holds for the kinds it serves (`startWorkerApp` builds it once). */
export interface WorkerKindContext {
  config: Config;
  logger: Logger;
  metrics?: WorkerMetrics;
  prisma: PrismaClient;
  /** Object storage that rides out an outage (see `createWorkerStorage`). */
  storage: ObjectStorage;
  /** The queues, for kinds that queue follow-up work (a blend's or a build's media). */
  queues: JobQueues;
  /** Every kind's job table, as the runner writes them (job events and webhooks included): a pipeline cancels its steps' jobs with them. */
  tables: MixdownJobTables;
  /** MODELS_DIR, resolved. */
  modelsDir: string;
  /** Voice models' files, downloaded once per process. */
  modelFiles: VoiceModelFiles;
  /** What a voice model still needs on this machine (a record's `missingAssets`). */
  voiceAssets: VoiceAssets;
  /** The formats every audio output is written in. */
  output: { losslessFormat: Config["LOSSLESS_FORMAT"]; lossyBitrateKbps: number };
  /** Registers a thread pool: the worker waits for it to be ready before taking jobs and closes it at the end. */
  pooled<P extends ThreadPool>(pool: P): P;
  /**
   * The idle policy of a thread pool named `name` (WORKER_MODEL_IDLE_SECONDS), with its log lines
   * and metrics; `onLoad` is told each time a job starts the unloaded threads again.
   */
  idle(name: string, onLoad?: () => void): PoolOptions;
  /** The conversion threads (and their loaded models) that conversions, TTS jobs and demo renders share, made on first use. */
  voiceConversionPool(): VoiceConversionPool;
  /** The analysis threads that audio analyses and separations created with `analyze=true` share, made on first use. */
  audioAnalysisPool(): AudioAnalysisPool;
}

/**
 * A job kind as the worker runs it: one folder under `kinds/` holds its handler, and its
 * protocol and thread where it has threads of its own. `kinds/index.ts` lists one per kind of the
 * catalogue, so a kind without one does not compile, and the worker refuses to start without one.
 */
export interface WorkerKind<K extends JobKind> {
  /**
   * The kind's handler, for a worker that serves its queue: its threads made (and registered with
   * `ctx.pooled`), its settings checked. A throw stops the worker at start with that reason.
   */
  start(ctx: WorkerKindContext): JobHandler<K> | Promise<JobHandler<K>>;
}
