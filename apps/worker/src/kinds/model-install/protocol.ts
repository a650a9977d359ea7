import type { CatalogueEntry, VoiceAssetPaths } from "@mixdown/model-catalogue";
import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool, type PoolOptions } from "../../task-threads.ts";

export interface ModelInstallRequest {
  entry: CatalogueEntry;
  modelsDir: string;
  assets: VoiceAssetPaths;
  /** MIXDOWN_MODEL_MIRROR */
  mirror: string | undefined;
}

export interface ModelInstallResult {
  /** What the installer says (`installed NAME (...)`), as `models pull` prints it. */
  summary: string;
  /** The pull's notes (each download and its checks), for the worker's log. */
  log: string[];
}

export type ModelInstallPool = TaskThreadPool<ModelInstallRequest, ModelInstallResult>;

export function createModelInstallPool(options?: PoolOptions): ModelInstallPool {
  return new TaskThreadPool("model install", siblingModule("./thread", import.meta.url), 1, {}, options);
}
