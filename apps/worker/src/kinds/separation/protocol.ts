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
