import { readFile } from "node:fs/promises";
import type * as ort from "onnxruntime-node";
import { inspectVoiceModelFile } from "./model-file.ts";
import { NativeVoiceEngine } from "./native/native-voice.ts";
import { RvcVoiceEngine, type RvcEngineOptions } from "./rvc/rvc-voice.ts";
import type { VoiceEngine } from "./voice-engine.ts";

export interface LoadVoiceEngineOptions {
  /** Output rate of an RVC model (from its VoiceModel row); native models declare theirs. */
  sampleRate?: number;
  /** ContentVec (vec-768-layer-12) ONNX, needed by RVC models. */
  contentVecPath?: string;
  /** RMVPE ONNX; YIN is used when absent. */
  rmvpePath?: string;
  /** The RVC model's feature index (faiss IVF-Flat), if it has one. */
  indexPath?: string;
  sessionOptions?: ort.InferenceSession.SessionOptions;
}

/** Loads a voice model file as the engine its signature calls for. */
export async function loadVoiceEngine(path: string, options: LoadVoiceEngineOptions = {}): Promise<VoiceEngine> {
  const info = inspectVoiceModelFile(await readFile(path));
  if (info.architecture === "native") return NativeVoiceEngine.load(path, options.sessionOptions);
  if (!options.contentVecPath) throw new Error("RVC models need a ContentVec ONNX model (VOICE_CONTENTVEC_MODEL)");
  const rvcOptions: RvcEngineOptions = {
    modelPath: path,
    contentVecPath: options.contentVecPath,
    sampleRate: options.sampleRate ?? 40000,
    ...(options.indexPath ? { indexPath: options.indexPath } : {}),
    ...(options.rmvpePath ? { rmvpePath: options.rmvpePath } : {}),
    ...(options.sessionOptions ? { sessionOptions: options.sessionOptions } : {}),
  };
  return RvcVoiceEngine.load(rvcOptions);
}
