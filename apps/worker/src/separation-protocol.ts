import type { OutputSpec, SeparateFileResult } from "@mixdown/separation";
import { TaskThreadPool } from "./task-threads.ts";

/** What a separation thread is started with (plain data: it crosses the thread boundary). */
export interface SeparationThreadData {
  modelsDir: string;
  executionProvider: "cpu" | "cuda";
  intraOpThreads: number;
  interOpThreads: number;
  /** Models loaded at start, so the first job pays no load time. */
  preload: string[];
}

export interface SeparationRequest {
  inputPath: string;
  modelName: string;
  outDir: string;
  outputs: OutputSpec[];
}

export type SeparationPool = TaskThreadPool<SeparationRequest, SeparateFileResult>;

export function createSeparationPool(size: number, data: SeparationThreadData): SeparationPool {
  return new TaskThreadPool("separation", new URL("./separation-thread.ts", import.meta.url), size, data);
}
