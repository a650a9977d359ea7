import type { HarmonizeRequest, HarmonizeResult } from "@mixdown/harmony";
import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool, type PoolOptions } from "../../task-threads.ts";

export type HarmonyPool = TaskThreadPool<HarmonizeRequest, HarmonizeResult>;

/** The harmony threads: the key, the pitch track and the crossfades are CPU work, never on the worker's main thread. */
export function createHarmonyPool(size: number, options?: PoolOptions): HarmonyPool {
  return new TaskThreadPool("harmony", siblingModule("./thread", import.meta.url), size, {}, options);
}
