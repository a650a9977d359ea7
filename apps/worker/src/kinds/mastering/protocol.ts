import type { LoudnessTarget } from "@mixdown/mastering/config";
import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool, type PoolOptions } from "../../task-threads.ts";

/** A mastering as its thread runs it: the files are on this machine already. */
export interface MasteringRequest {
  targetPath: string;
  /** reference mode: the reference track; absent in loudness mode */
  referencePath?: string;
  /** loudness mode: the target; absent in reference mode */
  loudness?: LoudnessTarget;
  /** loudness mode: the rate the master is written at (the target's) */
  sampleRate: number;
  /** where the master goes: 24-bit WAV, 16-bit WAV, mp3 */
  outputs: { wav24: string; wav16: string; mp3: string };
  mp3BitrateKbps: number;
  /** the job's folder: Matchering's scratch files go there */
  scratchDir: string;
}

export interface MasteringThreadResult {
  /** `matchering`, `ffmpeg loudnorm linear` or `ffmpeg loudnorm dynamic` */
  processor: string;
}

export type MasteringPool = TaskThreadPool<MasteringRequest, MasteringThreadResult>;

/** The mastering threads: FFTs, the limiter and the encoders' feeding run there, off the worker's event loop. */
export function createMasteringPool(size: number, options?: PoolOptions): MasteringPool {
  return new TaskThreadPool("mastering", siblingModule("./thread", import.meta.url), size, {}, options);
}
