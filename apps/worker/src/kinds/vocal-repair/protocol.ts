import type { AudioProbe, EncodeTarget } from "@mixdown/audio";
import type { DenoiseFileResult } from "@mixdown/repair";
import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool, type PoolOptions } from "../../task-threads.ts";

/** One denoise: an input and the files RNNoise's output is written to. */
export interface DenoiseRequest {
  inputPath: string;
  /** the input's probe, when the job has one (saves probing it again) */
  inputProbe?: AudioProbe;
  targets: EncodeTarget[];
}

export type DenoisePool = TaskThreadPool<DenoiseRequest, DenoiseFileResult>;

/** The denoise threads: RNNoise's WebAssembly runs synchronously, so never on the worker's main thread. */
export function createDenoisePool(size: number, options?: PoolOptions): DenoisePool {
  return new TaskThreadPool("denoise", siblingModule("./thread", import.meta.url), size, {}, options);
}
