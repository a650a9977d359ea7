import { resolve } from "node:path";
import type { AudioProbe } from "@mixdown/audio";
import type { Config } from "@mixdown/config";
import type { ConversionParams, ConvertVoiceFileResult } from "@mixdown/voice";
import { siblingModule } from "@mixdown/separation/sibling-module";
import { TaskThreadPool, type PoolOptions } from "../../task-threads.ts";

/** What a voice conversion thread is started with (plain data: it crosses the thread boundary). */
export interface VoiceThreadData {
  contentVecPath?: string;
  /** The 256-d ContentVec RVC v1 models take. */
  contentVecV1Path?: string;
  /** RMVPE ONNX for RVC models' f0, and whether to use it (auto: when the file exists). */
  rmvpePath?: string;
  pitchMethod: "auto" | "rmvpe" | "yin";
  intraOpThreads: number;
  interOpThreads: number;
  /** Loaded models kept per thread, most recently used first. */
  cachedModels: number;
}

export interface VoiceConversionRequest {
  inputPath: string;
  /** the input's probe, when the job has one (saves probing it again) */
  inputProbe?: AudioProbe;
  backingPath?: string;
  modelPath: string;
  /** The RVC model's feature index, if it has one. */
  indexPath?: string;
  /** Output rate of an RVC model. */
  sampleRate: number;
  params: ConversionParams;
  outDir: string;
  lossless: "wav" | "flac";
  mp3BitrateKbps: number;
}

export type VoiceConversionPool = TaskThreadPool<VoiceConversionRequest, ConvertVoiceFileResult>;

export function createVoiceConversionPool(size: number, data: VoiceThreadData, options?: PoolOptions): VoiceConversionPool {
  return new TaskThreadPool("voice conversion", siblingModule("./thread", import.meta.url), size, data, options);
}

/** The conversion threads a worker's settings ask for (WORKER_CONCURRENCY_VOICE_CONVERSION of them, VOICE_* models). */
export function voiceConversionPoolFor(config: Config, modelsDir: string, options?: PoolOptions): VoiceConversionPool {
  return createVoiceConversionPool(
    config.WORKER_CONCURRENCY_VOICE_CONVERSION,
    {
      contentVecPath: resolve(modelsDir, config.VOICE_CONTENTVEC_MODEL),
      contentVecV1Path: resolve(modelsDir, config.VOICE_CONTENTVEC_V1_MODEL),
      rmvpePath: resolve(modelsDir, config.VOICE_RMVPE_MODEL),
      pitchMethod: config.VOICE_PITCH_METHOD,
      intraOpThreads: config.ORT_INTRA_OP_THREADS,
      interOpThreads: config.ORT_INTER_OP_THREADS,
      cachedModels: config.VOICE_MODEL_CACHE_SIZE,
    },
    options,
  );
}
