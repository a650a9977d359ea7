import type { ConversionParams, ConvertVoiceFileResult } from "@mixdown/voice";

/** What a voice conversion thread is started with (plain data: it crosses the thread boundary). */
export interface VoiceThreadData {
  contentVecPath?: string;
  intraOpThreads: number;
  interOpThreads: number;
  /** Loaded models kept per thread, most recently used first. */
  cachedModels: number;
}

export interface VoiceConversionRequest {
  inputPath: string;
  backingPath?: string;
  modelPath: string;
  /** Output rate of an RVC model. */
  sampleRate: number;
  params: ConversionParams;
  outDir: string;
  lossless: "wav" | "flac";
  mp3BitrateKbps: number;
}

export type VoiceThreadRequest = { type: "convert"; id: number } & VoiceConversionRequest;

export type VoiceThreadResponse =
  | { type: "progress"; id: number; fraction: number }
  | { type: "result"; id: number; result: ConvertVoiceFileResult }
  | { type: "error"; id: number; message: string; unrecoverable: boolean };
