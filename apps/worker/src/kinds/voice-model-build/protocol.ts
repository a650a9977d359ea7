import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool, type PoolOptions } from "../../task-threads.ts";

export interface VoiceBuildRequest {
  referencePath: string;
  /** Where the thread writes the built ONNX model. */
  outPath: string;
  title: string;
}

export interface VoiceBuildResult {
  /** Seconds of voiced audio the model was measured from. */
  activeSeconds: number;
}

export type VoiceBuildPool = TaskThreadPool<VoiceBuildRequest, VoiceBuildResult>;

export function createVoiceBuildPool(size: number, options?: PoolOptions): VoiceBuildPool {
  return new TaskThreadPool("voice build", siblingModule("./thread", import.meta.url), size, {}, options);
}
