import type { AudioProbe } from "@mixdown/audio";
import type { AudioAnalysis } from "@mixdown/analysis";
import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool, type PoolOptions } from "../../task-threads.ts";

export interface AudioAnalysisRequest {
  inputPath: string;
  /** the input's probe, when the job has one (saves probing it again) */
  inputProbe?: AudioProbe;
}

export interface AudioAnalysisThreadResult {
  analysis: AudioAnalysis;
  /** What found key and tempo, and loudness: `essentia.js <version>; ffmpeg ebur128`. */
  analyzer: string;
}

export type AudioAnalysisPool = TaskThreadPool<AudioAnalysisRequest, AudioAnalysisThreadResult>;

/** The analysis threads: each keeps one Essentia WebAssembly instance between jobs. */
export function createAudioAnalysisPool(size: number, options?: PoolOptions): AudioAnalysisPool {
  return new TaskThreadPool("audio analysis", siblingModule("./thread", import.meta.url), size, {}, options);
}
