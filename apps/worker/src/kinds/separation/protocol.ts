import type { AudioProbe } from "@mixdown/audio";
import type {
  EnsembleAlgorithm,
  EnsembleStem,
  ExecutionProvider,
  OutputSpec,
  ProviderFallback,
  SeparateFileResult,
} from "@mixdown/separation";
import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool } from "../../task-threads.ts";

/** What a separation thread is started with (plain data: it crosses the thread boundary). */
export interface SeparationThreadData {
  modelsDir: string;
  executionProvider: ExecutionProvider;
  providerFallback: ProviderFallback;
  intraOpThreads: number;
  interOpThreads: number;
  /** Models loaded at start, so the first job pays no load time. */
  preload: string[];
  /** Models on an inference thread of their own (ModelRegistryOptions.ownThread): the vocal split's. */
  ownThread: string[];
}

export interface SeparationRequest {
  inputPath: string;
  /** the input's probe, when the job has one (saves probing it again) */
  inputProbe?: AudioProbe;
  modelName: string;
  outDir: string;
  outputs: OutputSpec[];
  /** the stems to write (default: all the model outputs) */
  stems?: string[];
  /**
   * Run several models and combine their outputs (separateEnsemble) instead of `modelName` alone:
   * the members in order, the algorithm, and what each written stem combines.
   */
  ensemble?: { models: string[]; algorithm: EnsembleAlgorithm; stems: EnsembleStem[] };
  /**
   * A second model over one of the written stems in the same pass (a vocal separation's whole
   * vocal into harmony and reverb, the lead their remainder): see StemSplit. Not with `ensemble`.
   */
  split?: { modelName: string; of: string; stems: string[]; remainder: string };
}

/** What a separation thread reports once its models are loaded: where each one runs. */
export interface SeparationModelProvider {
  model: string;
  requested: ExecutionProvider;
  running: ExecutionProvider;
  /** why it runs on cpu when another provider was asked for */
  fallbackReason?: string;
}

export type SeparationPool = TaskThreadPool<SeparationRequest, SeparateFileResult>;

export function createSeparationPool(size: number, data: SeparationThreadData): SeparationPool {
  return new TaskThreadPool("separation", siblingModule("./thread", import.meta.url), size, data);
}
