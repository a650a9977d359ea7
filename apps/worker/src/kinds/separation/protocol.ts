import type { AudioProbe } from "@mixdown/audio";
import type {
  ExecutionProvider,
  OutputSpec,
  ProviderFallback,
  SeparateFileResult,
  SeparationManifest,
} from "@mixdown/separation";
import type { SeparationRun } from "@mixdown/separation/job-plan";
import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool, type PoolOptions } from "../../task-threads.ts";
import type { WorkerKindContext } from "../context.ts";

/** What a separation thread is started with (plain data: it crosses the thread boundary). */
export interface SeparationThreadData {
  modelsDir: string;
  executionProvider: ExecutionProvider;
  providerFallback: ProviderFallback;
  intraOpThreads: number;
  interOpThreads: number;
  /** Models loaded at start, so the first job pays no load time: their manifests, as the start-up check read them. */
  preload: SeparationManifest[];
  /** Models on an inference thread of their own (ModelRegistryOptions.ownThread): the vocal split's. */
  ownThread: string[];
}

/**
 * One run of the separation thread: an input, where its files go, and what runs over it (one
 * model, the vocal split in the same pass, or an ensemble: see SeparationRun). `stems` are the
 * stems to write (default: all the model outputs).
 */
export type SeparationRequest = {
  inputPath: string;
  /** the input's probe, when the job has one (saves probing it again) */
  inputProbe?: AudioProbe;
  outDir: string;
  outputs: OutputSpec[];
} & SeparationRun;

/** What a separation thread reports once its models are loaded: where each one runs. */
export interface SeparationModelProvider {
  model: string;
  requested: ExecutionProvider;
  running: ExecutionProvider;
  /** why it runs on cpu when another provider was asked for */
  fallbackReason?: string;
}

export type SeparationPool = TaskThreadPool<SeparationRequest, SeparateFileResult>;

export function createSeparationPool(size: number, data: SeparationThreadData, options?: PoolOptions): SeparationPool {
  return new TaskThreadPool("separation", siblingModule("./thread", import.meta.url), size, data, options);
}

/**
 * Separation threads of a kind's own that load no model until one of its jobs runs one (a vocal
 * repair's dereverb, an isolation of a mix's vocal), made on the first such job and registered with
 * the worker; unloaded when idle (WORKER_MODEL_IDLE_SECONDS). A worker that also serves the
 * separation kind may hold the models twice while both are busy.
 */
export function ownSeparationPool(
  { config, modelsDir, pooled, idle }: Pick<WorkerKindContext, "config" | "modelsDir" | "pooled" | "idle">,
  size: number,
  name: string,
): () => SeparationPool {
  let pool: SeparationPool | undefined;
  return () =>
    (pool ??= pooled(
      createSeparationPool(
        size,
        {
          modelsDir,
          executionProvider: config.ORT_EXECUTION_PROVIDER,
          providerFallback: config.ORT_PROVIDER_FALLBACK,
          intraOpThreads: config.ORT_INTRA_OP_THREADS,
          interOpThreads: config.ORT_INTER_OP_THREADS,
          preload: [],
          ownThread: [],
        },
        { ...idle(name), startUnloaded: true },
      ),
    ));
}
