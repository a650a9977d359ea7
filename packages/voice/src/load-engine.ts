import { readFile } from "node:fs/promises";
import type * as ort from "onnxruntime-node";
import { contentVecMissingMessage, MissingVoiceAssetError } from "./assets.ts";
import { inspectVoiceModelFile } from "./model-file.ts";
import { NativeVoiceEngine } from "./native/native-voice.ts";
import { RvcVoiceEngine, type RvcEngineOptions } from "./rvc/rvc-voice.ts";
import type { VoiceEngine } from "./voice-engine.ts";

export interface LoadVoiceEngineOptions {
  /** Output rate of an RVC model (from its VoiceModel row); native models declare theirs. */
  sampleRate?: number;
  /** ContentVec (vec-768-layer-12) ONNX, needed by RVC v2 models. */
  contentVecPath?: string;
  /** ContentVec's 256-d form (vec-256-layer-9: layer 9 and the final projection), needed by RVC v1 models. */
  contentVecV1Path?: string;
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
  // RVC v1 models take 256-d features (their `phone` input says so), v2 models 768-d.
  const v1 = info.inputs.find((i) => i.name === "phone")?.dims[2] === 256;
  const contentVecPath = v1 ? (options.contentVecV1Path ?? options.contentVecPath) : options.contentVecPath;
  if (!contentVecPath)
    throw new MissingVoiceAssetError(v1 ? "contentvec-v1" : "contentvec", contentVecMissingMessage(v1 ? "v1" : "v2"));
  const rvcOptions: RvcEngineOptions = {
    modelPath: path,
    contentVecPath,
    sampleRate: options.sampleRate ?? 40000,
    ...(options.indexPath ? { indexPath: options.indexPath } : {}),
    ...(options.rmvpePath ? { rmvpePath: options.rmvpePath } : {}),
    ...(options.sessionOptions ? { sessionOptions: options.sessionOptions } : {}),
  };
  return RvcVoiceEngine.load(rvcOptions);
}
