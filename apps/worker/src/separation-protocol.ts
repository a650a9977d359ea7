import type { OutputSpec, SeparateFileResult } from "@mixdown/separation";

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

export type ThreadRequest = ({ type: "separate"; id: number } & SeparationRequest) | { type: "close" };

export interface ThreadError {
  name: string;
  message: string;
  /** The input or the model can never work: retrying is pointless. */
  unrecoverable: boolean;
}

export type ThreadResponse =
  | { type: "ready" }
  | { type: "fatal"; message: string }
  | { type: "closed" }
  | { type: "progress"; id: number; fraction: number }
  | { type: "result"; id: number; result: SeparateFileResult }
  | { type: "error"; id: number; error: ThreadError };
